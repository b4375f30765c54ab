// Reading and writing tensor elements of any dtype as doubles (test references).
#pragma once

#include <cstdint>

#include "kernels/half.h"
#include "korovod/types.h"

namespace korovod::testing {

using kernels::bfloat16_to_float;
using kernels::float16_to_float;
using kernels::float_to_bfloat16;
using kernels::float_to_float16;

inline // Stores a double as `dtype` in a byte buffer and reads it back as a double.
void store(DataType t, void* p, int64_t i, double v) {
  switch (t) {
    case DataType::kUInt8: static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v); break;
    case DataType::kInt8: static_cast<int8_t*>(p)[i] = static_cast<int8_t>(v); break;
    case DataType::kUInt16: static_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(v); break;
    case DataType::kInt16: static_cast<int16_t*>(p)[i] = static_cast<int16_t>(v); break;
    case DataType::kInt32: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v); break;
    case DataType::kInt64: static_cast<int64_t*>(p)[i] = static_cast<int64_t>(v); break;
    case DataType::kFloat16: static_cast<uint16_t*>(p)[i] = float_to_float16(static_cast<float>(v)); break;
    case DataType::kBFloat16: static_cast<uint16_t*>(p)[i] = float_to_bfloat16(static_cast<float>(v)); break;
    case DataType::kFloat32: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    case DataType::kFloat64: static_cast<double*>(p)[i] = v; break;
    case DataType::kBool: static_cast<uint8_t*>(p)[i] = v != 0; break;
  }
}

inline double load(DataType t, const void* p, int64_t i) {
  switch (t) {
    case DataType::kUInt8: return static_cast<const uint8_t*>(p)[i];
    case DataType::kInt8: return static_cast<const int8_t*>(p)[i];
    case DataType::kUInt16: return static_cast<const uint16_t*>(p)[i];
    case DataType::kInt16: return static_cast<const int16_t*>(p)[i];
    case DataType::kInt32: return static_cast<const int32_t*>(p)[i];
    case DataType::kInt64: return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case DataType::kFloat16: return float16_to_float(static_cast<const uint16_t*>(p)[i]);
    case DataType::kBFloat16: return bfloat16_to_float(static_cast<const uint16_t*>(p)[i]);
    case DataType::kFloat32: return static_cast<const float*>(p)[i];
    case DataType::kFloat64: return static_cast<const double*>(p)[i];
    case DataType::kBool: return static_cast<const uint8_t*>(p)[i];
  }
  return 0;
}


}  // namespace korovod::testing
