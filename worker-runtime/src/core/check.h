// Assertions for broken invariants (not for expected failures, which are Status values).
#pragma once

#include <cstdio>
#include <cstdlib>

#define KOROVOD_CHECK(cond)                                                         \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "korovod: %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                 \
    }                                                                               \
  } while (0)

#define KOROVOD_CHECK_EQ(a, b)                                                       \
  do {                                                                               \
    auto korovod_a_ = (a);                                                           \
    auto korovod_b_ = (b);                                                           \
    if (!(korovod_a_ == korovod_b_)) {                                               \
      std::fprintf(stderr, "korovod: %s:%d: check failed: %s == %s (%lld vs %lld)\n",  \
                   __FILE__, __LINE__, #a, #b, static_cast<long long>(korovod_a_),    \
                   static_cast<long long>(korovod_b_));                              \
      std::abort();                                                                  \
    }                                                                                \
  } while (0)
