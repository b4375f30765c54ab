// The two loops of the Adasum reduction (algorithms/adasum.cc): per tensor segment, the dot
// product and both squared norms, then a = acoeff * a + bcoeff * b. Accumulation in double for
// every dtype (Horovod's kernels accumulate float16 and float32 in double too); float16 and
// bfloat16 are widened in blocks, combined in float32 and rounded once.
#include <algorithm>

#include "kernels/kernels.h"

namespace korovod::kernels {
namespace {

template <typename T>
DotNorms dot_typed(const void* a, const void* b, int64_t n) {
  const auto* x = static_cast<const T*>(a);
  const auto* y = static_cast<const T*>(b);
  double dot = 0, aa = 0, bb = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double u = static_cast<double>(x[i]), v = static_cast<double>(y[i]);
    dot += u * v;
    aa += u * u;
    bb += v * v;
  }
  return {dot, aa, bb};
}

template <typename T>
void scaled_add_typed(void* a, double acoeff, const void* b, double bcoeff, int64_t n) {
  auto* x = static_cast<T*>(a);
  const auto* y = static_cast<const T*>(b);
  const T ka = static_cast<T>(acoeff), kb = static_cast<T>(bcoeff);
  for (int64_t i = 0; i < n; ++i) x[i] = ka * x[i] + kb * y[i];
}

using ToFloat = void (*)(const uint16_t*, float*, int64_t);
using FromFloat = void (*)(const float*, uint16_t*, int64_t);
constexpr int64_t kBlock = 1024;

DotNorms dot_half(const void* a, const void* b, int64_t n, ToFloat widen) {
  alignas(64) float fa[kBlock];
  alignas(64) float fb[kBlock];
  const auto* x = static_cast<const uint16_t*>(a);
  const auto* y = static_cast<const uint16_t*>(b);
  DotNorms total{0, 0, 0};
  for (int64_t start = 0; start < n; start += kBlock) {
    const int64_t len = std::min(kBlock, n - start);
    widen(x + start, fa, len);
    widen(y + start, fb, len);
    const DotNorms part = dot_typed<float>(fa, fb, len);
    total.dot += part.dot;
    total.a_squared += part.a_squared;
    total.b_squared += part.b_squared;
  }
  return total;
}

void scaled_add_half(void* a, double acoeff, const void* b, double bcoeff, int64_t n, ToFloat widen,
                     FromFloat narrow) {
  alignas(64) float fa[kBlock];
  alignas(64) float fb[kBlock];
  auto* x = static_cast<uint16_t*>(a);
  const auto* y = static_cast<const uint16_t*>(b);
  for (int64_t start = 0; start < n; start += kBlock) {
    const int64_t len = std::min(kBlock, n - start);
    widen(x + start, fa, len);
    widen(y + start, fb, len);
    scaled_add_typed<float>(fa, acoeff, fb, bcoeff, len);
    narrow(fa, x + start, len);
  }
}

}  // namespace

bool adasum_supports(DataType dtype) {
  return dtype == DataType::kFloat16 || dtype == DataType::kBFloat16 || dtype == DataType::kFloat32 ||
         dtype == DataType::kFloat64;
}

DotNorms dot_and_norms(DataType dtype, const void* a, const void* b, int64_t count) {
  switch (dtype) {
    case DataType::kFloat32: return dot_typed<float>(a, b, count);
    case DataType::kFloat64: return dot_typed<double>(a, b, count);
    case DataType::kFloat16: return dot_half(a, b, count, float16_to_float32);
    case DataType::kBFloat16: return dot_half(a, b, count, bfloat16_to_float32);
    default: return {0, 0, 0};  // callers check adasum_supports first
  }
}

void scaled_add(DataType dtype, void* a, double acoeff, const void* b, double bcoeff, int64_t count) {
  switch (dtype) {
    case DataType::kFloat32: return scaled_add_typed<float>(a, acoeff, b, bcoeff, count);
    case DataType::kFloat64: return scaled_add_typed<double>(a, acoeff, b, bcoeff, count);
    case DataType::kFloat16:
      return scaled_add_half(a, acoeff, b, bcoeff, count, float16_to_float32, float32_to_float16);
    case DataType::kBFloat16:
      return scaled_add_half(a, acoeff, b, bcoeff, count, bfloat16_to_float32, float32_to_bfloat16);
    default: return;
  }
}

}  // namespace korovod::kernels
