// Scalar float16 / bfloat16 <-> float32 conversions (round-to-nearest-even), the reference the
// vector paths must match and the tail loop they fall back to.
#pragma once

#include <cstdint>
#include <cstring>

namespace korovod::kernels {

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline float bfloat16_to_float(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }

// Branch-free so loops over it vectorize; NaN stays a (quiet) NaN.
inline uint16_t float_to_bfloat16(float f) {
  uint32_t u = float_bits(f);
  uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  uint32_t nan = (u >> 16) | 0x40u;
  bool is_nan = (u & 0x7FFFFFFFu) > 0x7F800000u;
  return static_cast<uint16_t>(is_nan ? nan : rounded);
}

inline float float16_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F) return bits_float(sign | 0x7F800000u | (mant << 13));  // inf / nan
  if (exp == 0) {                                                         // zero / subnormal
    float m = static_cast<float>(mant) * (1.0f / 16777216.0f);             // mant * 2^-24
    return sign ? -m : m;
  }
  return bits_float(sign | ((exp + 112) << 23) | (mant << 13));
}

inline uint16_t float_to_float16(float f) {
  uint32_t u = float_bits(f);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  uint32_t abs = u & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return sign | 0x7E00u;                     // nan
  if (abs >= 0x477FF000u) return sign | 0x7C00u;                    // overflow -> inf
  if (abs < 0x38800000u) {                                          // subnormal or zero
    // Adding 0.5 makes the FPU round the mantissa at bit 24 to nearest even for us.
    float shifted = bits_float(abs) + 0.5f;
    return sign | static_cast<uint16_t>(float_bits(shifted) - float_bits(0.5f));
  }
  uint32_t mant_odd = (abs >> 13) & 1u;
  abs += 0xC8000FFFu + mant_odd;  // rebias exponent (-112 << 23) and round to nearest even
  return sign | static_cast<uint16_t>(abs >> 13);
}

}  // namespace korovod::kernels
