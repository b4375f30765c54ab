// Clang thread-safety annotations (-Wthread-safety; no-ops under GCC): what each lock guards and
// which functions need it, checked by the thread_safety.clang ctest entry (docs/testing.md).
// The annotated locks are in core/mutex.h. The operator has its own copy (operator/kube/mutex.h):
// the two libraries do not depend on each other.
#pragma once

#if defined(__clang__)
#define KOROVOD_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define KOROVOD_THREAD_ANNOTATION(x)
#endif

// A class that is a lock (Mutex, SharedMutex, TimedMutex).
#define KOROVOD_CAPABILITY(name) KOROVOD_THREAD_ANNOTATION(capability(name))
// An RAII class that holds a lock for its lifetime (MutexLock).
#define KOROVOD_SCOPED_CAPABILITY KOROVOD_THREAD_ANNOTATION(scoped_lockable)
// A member read and written only with the lock held.
#define KOROVOD_GUARDED_BY(x) KOROVOD_THREAD_ANNOTATION(guarded_by(x))
// A pointer member whose pointee is read and written only with the lock held.
#define KOROVOD_PT_GUARDED_BY(x) KOROVOD_THREAD_ANNOTATION(pt_guarded_by(x))
// A function its callers call with the lock held (exclusively / at least shared).
#define KOROVOD_REQUIRES(...) KOROVOD_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define KOROVOD_REQUIRES_SHARED(...) KOROVOD_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
// A function that takes the lock itself: calling it with the lock held deadlocks.
#define KOROVOD_EXCLUDES(...) KOROVOD_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
// Functions that take / give back a lock and return holding / not holding it.
#define KOROVOD_ACQUIRE(...) KOROVOD_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define KOROVOD_ACQUIRE_SHARED(...) KOROVOD_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define KOROVOD_RELEASE(...) KOROVOD_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define KOROVOD_RELEASE_SHARED(...) KOROVOD_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define KOROVOD_RELEASE_GENERIC(...) KOROVOD_THREAD_ANNOTATION(release_generic_capability(__VA_ARGS__))
#define KOROVOD_TRY_ACQUIRE(...) KOROVOD_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
// A function whose body the analysis skips; every use says why next to it.
#define KOROVOD_NO_THREAD_SAFETY_ANALYSIS KOROVOD_THREAD_ANNOTATION(no_thread_safety_analysis)
