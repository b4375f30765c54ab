#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/half.h"
#include "kernels/kernels.h"

namespace korovod::kernels {
namespace {

template <typename T>
void scale_copy_typed(void* dst, const void* src, int64_t n, double factor) {
  auto* d = static_cast<T*>(dst);
  auto* s = static_cast<const T*>(src);
  if constexpr (std::is_same_v<T, float>) {
    const float f = static_cast<float>(factor);
    for (int64_t i = 0; i < n; ++i) d[i] = s[i] * f;
  } else {
    for (int64_t i = 0; i < n; ++i) d[i] = static_cast<T>(static_cast<double>(s[i]) * factor);
  }
}

using ToFloat = void (*)(const uint16_t*, float*, int64_t);
using FromFloat = void (*)(const float*, uint16_t*, int64_t);

void scale_copy_half(void* dst, const void* src, int64_t n, double factor, ToFloat widen, FromFloat narrow) {
  constexpr int64_t kBlock = 1024;
  alignas(64) float f[kBlock];
  const float k = static_cast<float>(factor);
  auto* d = static_cast<uint16_t*>(dst);
  auto* s = static_cast<const uint16_t*>(src);
  for (int64_t start = 0; start < n; start += kBlock) {
    int64_t len = std::min(kBlock, n - start);
    widen(s + start, f, len);
    for (int64_t i = 0; i < len; ++i) f[i] *= k;
    narrow(f, d + start, len);
  }
}

void scale_copy_bool(void* dst, const void* src, int64_t n, double factor) {
  auto* d = static_cast<uint8_t*>(dst);
  auto* s = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n; ++i) d[i] = (s[i] != 0 && factor != 0.0) ? 1 : 0;
}

}  // namespace

void scale_copy(DataType dtype, void* dst, const void* src, int64_t count, double factor) {
  if (factor == 1.0) {
    if (dst != src && count > 0) std::memcpy(dst, src, static_cast<size_t>(count) * element_size(dtype));
    return;
  }
  switch (dtype) {
    case DataType::kUInt8: return scale_copy_typed<uint8_t>(dst, src, count, factor);
    case DataType::kInt8: return scale_copy_typed<int8_t>(dst, src, count, factor);
    case DataType::kUInt16: return scale_copy_typed<uint16_t>(dst, src, count, factor);
    case DataType::kInt16: return scale_copy_typed<int16_t>(dst, src, count, factor);
    case DataType::kInt32: return scale_copy_typed<int32_t>(dst, src, count, factor);
    case DataType::kInt64: return scale_copy_typed<int64_t>(dst, src, count, factor);
    case DataType::kFloat32: return scale_copy_typed<float>(dst, src, count, factor);
    case DataType::kFloat64: return scale_copy_typed<double>(dst, src, count, factor);
    case DataType::kBool: return scale_copy_bool(dst, src, count, factor);
    case DataType::kFloat16:
      return scale_copy_half(dst, src, count, factor, float16_to_float32, float32_to_float16);
    case DataType::kBFloat16:
      return scale_copy_half(dst, src, count, factor, bfloat16_to_float32, float32_to_bfloat16);
  }
}

void scale(DataType dtype, void* buf, int64_t count, double factor) {
  scale_copy(dtype, buf, buf, count, factor);
}

}  // namespace korovod::kernels
