// Clang thread-safety annotations; no-ops under GCC. Every mutex member says what it guards.
#pragma once

#if defined(__clang__)
#define KOROVOD_GUARDED_BY(x) __attribute__((guarded_by(x)))
#define KOROVOD_REQUIRES(x) __attribute__((requires_capability(x)))
#else
#define KOROVOD_GUARDED_BY(x)
#define KOROVOD_REQUIRES(x)
#endif
