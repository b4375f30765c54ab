#include <immintrin.h>

#include "kernels/half.h"
#include "kernels/kernels.h"

namespace korovod::kernels {
namespace {

bool has_f16c() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c"); }

__attribute__((target("avx2,f16c"))) void f16_to_f32_f16c(const uint16_t* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) out[i] = float16_to_float(in[i]);
}

__attribute__((target("avx2,f16c"))) void f32_to_f16_f16c(const float* in, uint16_t* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  for (; i < n; ++i) out[i] = float_to_float16(in[i]);
}

}  // namespace

void float16_to_float32(const uint16_t* in, float* out, int64_t count) {
  if (has_f16c()) return f16_to_f32_f16c(in, out, count);
  for (int64_t i = 0; i < count; ++i) out[i] = float16_to_float(in[i]);
}

void float32_to_float16(const float* in, uint16_t* out, int64_t count) {
  if (has_f16c()) return f32_to_f16_f16c(in, out, count);
  for (int64_t i = 0; i < count; ++i) out[i] = float_to_float16(in[i]);
}

// Plain loops: branch-free bodies, auto-vectorized at -O3.
void bfloat16_to_float32(const uint16_t* in, float* out, int64_t count) {
  for (int64_t i = 0; i < count; ++i) out[i] = bfloat16_to_float(in[i]);
}

void float32_to_bfloat16(const float* in, uint16_t* out, int64_t count) {
  for (int64_t i = 0; i < count; ++i) out[i] = float_to_bfloat16(in[i]);
}

}  // namespace korovod::kernels
