// CPU kernels used by the backends and the fusion copies: reduction, scaling, and
// float16/bfloat16 <-> float32 conversion. float16/bfloat16 are computed in float32 and rounded
// to nearest even once per operation. bool reduces as logic (Sum/Max = or, Product/Min = and).
// Integer overflow wraps. Integer scaling truncates toward zero (as Horovod's ScaleBuffer).
#pragma once

#include <cstdint>

#include "korovod/types.h"

namespace korovod::kernels {

// inout[i] = inout[i] (op) in[i]; Average reduces as Sum (the caller scales).
void reduce_into(DataType dtype, ReduceOp op, void* inout, const void* in, int64_t count);
// buf[i] *= factor
void scale(DataType dtype, void* buf, int64_t count, double factor);
// dst[i] = src[i] * factor (a plain copy when factor == 1)
void scale_copy(DataType dtype, void* dst, const void* src, int64_t count, double factor);

// Adasum (algorithms/adasum.cc) on float16, bfloat16, float32 and float64 only.
bool adasum_supports(DataType dtype);
struct DotNorms {
  double dot;        // sum a[i] * b[i]
  double a_squared;  // sum a[i]^2
  double b_squared;  // sum b[i]^2
};
DotNorms dot_and_norms(DataType dtype, const void* a, const void* b, int64_t count);
// a[i] = acoeff * a[i] + bcoeff * b[i]
void scaled_add(DataType dtype, void* a, double acoeff, const void* b, double bcoeff, int64_t count);

void float16_to_float32(const uint16_t* in, float* out, int64_t count);
void float32_to_float16(const float* in, uint16_t* out, int64_t count);
void bfloat16_to_float32(const uint16_t* in, float* out, int64_t count);
void float32_to_bfloat16(const float* in, uint16_t* out, int64_t count);

}  // namespace korovod::kernels
