#include "gpu_values.h"

#include <cmath>
#include <cstring>

#include "kernels/half.h"

namespace korovod::gputest {
namespace {

template <typename T>
void put(std::vector<std::byte>& out, size_t i, T v) {
  std::memcpy(out.data() + i * sizeof(T), &v, sizeof(T));
}

template <typename T>
T get(const std::vector<std::byte>& in, size_t i) {
  T v;
  std::memcpy(&v, in.data() + i * sizeof(T), sizeof(T));
  return v;
}

}  // namespace

std::vector<std::byte> encode(DataType dtype, const std::vector<double>& values) {
  std::vector<std::byte> out(values.size() * element_size(dtype));
  for (size_t i = 0; i < values.size(); ++i) {
    const double v = values[i];
    switch (dtype) {
      case DataType::kUInt8: put<uint8_t>(out, i, static_cast<uint8_t>(v)); break;
      case DataType::kInt8: put<int8_t>(out, i, static_cast<int8_t>(v)); break;
      case DataType::kUInt16: put<uint16_t>(out, i, static_cast<uint16_t>(v)); break;
      case DataType::kInt16: put<int16_t>(out, i, static_cast<int16_t>(v)); break;
      case DataType::kInt32: put<int32_t>(out, i, static_cast<int32_t>(v)); break;
      case DataType::kInt64: put<int64_t>(out, i, static_cast<int64_t>(v)); break;
      case DataType::kFloat16: put<uint16_t>(out, i, kernels::float_to_float16(static_cast<float>(v))); break;
      case DataType::kBFloat16: put<uint16_t>(out, i, kernels::float_to_bfloat16(static_cast<float>(v))); break;
      case DataType::kFloat32: put<float>(out, i, static_cast<float>(v)); break;
      case DataType::kFloat64: put<double>(out, i, v); break;
      case DataType::kBool: put<uint8_t>(out, i, v != 0 ? 1 : 0); break;
    }
  }
  return out;
}

std::vector<double> decode(DataType dtype, const std::vector<std::byte>& bytes) {
  std::vector<double> out(bytes.size() / element_size(dtype));
  for (size_t i = 0; i < out.size(); ++i) {
    switch (dtype) {
      case DataType::kUInt8: out[i] = get<uint8_t>(bytes, i); break;
      case DataType::kInt8: out[i] = get<int8_t>(bytes, i); break;
      case DataType::kUInt16: out[i] = get<uint16_t>(bytes, i); break;
      case DataType::kInt16: out[i] = get<int16_t>(bytes, i); break;
      case DataType::kInt32: out[i] = get<int32_t>(bytes, i); break;
      case DataType::kInt64: out[i] = static_cast<double>(get<int64_t>(bytes, i)); break;
      case DataType::kFloat16: out[i] = kernels::float16_to_float(get<uint16_t>(bytes, i)); break;
      case DataType::kBFloat16: out[i] = kernels::bfloat16_to_float(get<uint16_t>(bytes, i)); break;
      case DataType::kFloat32: out[i] = get<float>(bytes, i); break;
      case DataType::kFloat64: out[i] = get<double>(bytes, i); break;
      case DataType::kBool: out[i] = get<uint8_t>(bytes, i); break;
    }
  }
  return out;
}

double tolerance(DataType dtype, double expected) {
  const double scale = std::max(1.0, std::fabs(expected));
  switch (dtype) {
    case DataType::kFloat16: return 2e-3 * scale;
    case DataType::kBFloat16: return 1e-2 * scale;
    case DataType::kFloat32: return 1e-6 * scale;
    case DataType::kFloat64: return 1e-12 * scale;
    default: return 0.0;
  }
}

}  // namespace korovod::gputest
