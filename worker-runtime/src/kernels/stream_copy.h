// A copy whose destination is written with non-temporal (streaming) stores: for outputs of large
// collectives, which no cache will hold until they are read, so writing them need not first read
// every destination line into the cache (the read-for-ownership a plain store costs). Weakly
// ordered: call stream_fence() before publishing, to another thread or process, that the data is
// there. Falls back to memcpy off x86-64.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace korovod {

inline void stream_copy(std::byte* dst, const std::byte* src, int64_t n) {
  if (n <= 0 || dst == src) return;
#if defined(__x86_64__)
  // Head up to the first 16-byte boundary of dst, then 64 bytes per step, then the tail.
  const int64_t head = std::min<int64_t>(n, static_cast<int64_t>((16 - reinterpret_cast<uintptr_t>(dst) % 16) % 16));
  std::memcpy(dst, src, static_cast<size_t>(head));
  int64_t i = head;
  for (; i + 64 <= n; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 48), d);
  }
  std::memcpy(dst + i, src + i, static_cast<size_t>(n - i));
#else
  std::memcpy(dst, src, static_cast<size_t>(n));
#endif
}

// Orders the streaming stores before any later store (e.g. a release store of a counter).
inline void stream_fence() {
#if defined(__x86_64__)
  _mm_sfence();
#endif
}

}  // namespace korovod
