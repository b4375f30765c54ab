// Kernels for every dtype and op against a float64 reference; 16-bit float rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/half.h"
#include "kernels/kernels.h"
#include "kernels/testing/dtype_values.h"

namespace korovod {
namespace {

using kernels::bfloat16_to_float;
using kernels::float16_to_float;
using kernels::float_to_bfloat16;
using kernels::float_to_float16;
using testing::load;
using testing::store;

double reference(DataType t, ReduceOp op, double a, double b) {
  if (t == DataType::kBool) {
    bool x = a != 0, y = b != 0;
    return (op == ReduceOp::kProduct || op == ReduceOp::kMin) ? (x && y) : (x || y);
  }
  switch (op) {
    case ReduceOp::kMin: return std::min(a, b);
    case ReduceOp::kMax: return std::max(a, b);
    case ReduceOp::kProduct: return a * b;
    default: return a + b;
  }
}

double tolerance(DataType t, double ref) {
  if (t == DataType::kFloat16) return std::abs(ref) * 1e-3 + 1e-3;
  if (t == DataType::kBFloat16) return std::abs(ref) * 8e-3 + 1e-2;
  if (t == DataType::kFloat32) return std::abs(ref) * 1e-6;
  return 0;
}

const DataType kAllTypes[] = {DataType::kUInt8, DataType::kInt8, DataType::kUInt16, DataType::kInt16,
                              DataType::kInt32, DataType::kInt64, DataType::kFloat16, DataType::kFloat32,
                              DataType::kFloat64, DataType::kBool, DataType::kBFloat16};
const ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct};

TEST(Kernels, ReduceMatchesFloat64ReferenceForEveryDtypeAndOp) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> small(-4, 4);
  for (DataType t : kAllTypes) {
    for (ReduceOp op : kOps) {
      for (int64_t n : {0, 1, 7, 1023, 1025, 5000}) {  // odd counts cover the vector tails
        std::vector<std::byte> a(n * element_size(t) + 1), b(n * element_size(t) + 1);
        std::vector<double> ref(n);
        const bool is_unsigned = t == DataType::kUInt8 || t == DataType::kUInt16 || t == DataType::kBool;
        for (int64_t i = 0; i < n; ++i) {
          double x = small(rng), y = small(rng);
          if (is_unsigned) { x = std::abs(x); y = std::abs(y); }
          if (is_floating(t)) { x += 0.25; y -= 0.5; }
          store(t, a.data(), i, x);
          store(t, b.data(), i, y);
          ref[i] = reference(t, op, load(t, a.data(), i), load(t, b.data(), i));
        }
        kernels::reduce_into(t, op, a.data(), b.data(), n);
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_NEAR(load(t, a.data(), i), ref[i], tolerance(t, ref[i]))
              << dtype_name(t) << " " << reduce_op_name(op) << " n=" << n << " i=" << i;
        }
      }
    }
  }
}

TEST(Kernels, ScaleCopyMatchesReferenceAndIntegersTruncate) {
  for (DataType t : kAllTypes) {
    if (t == DataType::kBool) continue;
    const int64_t n = 1037;
    std::vector<std::byte> src(n * element_size(t)), dst(n * element_size(t));
    for (int64_t i = 0; i < n; ++i) store(t, src.data(), i, static_cast<double>(i % 50));
    kernels::scale_copy(t, dst.data(), src.data(), n, 0.5);
    for (int64_t i = 0; i < n; ++i) {
      double expect = (i % 50) * 0.5;
      if (!is_floating(t)) expect = std::trunc(expect);
      ASSERT_NEAR(load(t, dst.data(), i), expect, tolerance(t, expect)) << dtype_name(t) << " i=" << i;
    }
  }
}

TEST(Kernels, Bfloat16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bfloat16(1.00390625f), 0x3F80);          // halfway, even stays
  EXPECT_EQ(float_to_bfloat16(1.01171875f), 0x3F82);          // halfway, odd rounds up
  EXPECT_EQ(float_to_bfloat16(kernels::bits_float(0x3F808001u)), 0x3F81);  // just above halfway
  EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(NAN))));
  EXPECT_EQ(float_to_bfloat16(INFINITY), 0x7F80);
}

TEST(Kernels, Float16RoundsToNearestEvenIncludingSubnormalsAndOverflow) {
  EXPECT_EQ(float_to_float16(1.0f), 0x3C00);
  EXPECT_EQ(float_to_float16(1.0f + 1.0f / 2048), 0x3C00);      // halfway, even
  EXPECT_EQ(float_to_float16(1.0f + 3.0f / 2048), 0x3C02);      // halfway, odd -> up
  EXPECT_EQ(float_to_float16(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_float16(65520.0f), 0x7C00);                // rounds to inf
  EXPECT_EQ(float_to_float16(std::ldexp(1.0f, -24)), 0x0001);   // smallest subnormal
  EXPECT_EQ(float_to_float16(std::ldexp(1.0f, -26)), 0x0000);   // below half of it
  EXPECT_EQ(float16_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(float16_to_float(0xFC00), -INFINITY);
}

TEST(Kernels, VectorConversionsMatchScalarOnEveryHalfValue) {
  std::vector<uint16_t> all(65536);
  for (int i = 0; i < 65536; ++i) all[i] = static_cast<uint16_t>(i);
  std::vector<float> wide(65536);
  kernels::float16_to_float32(all.data(), wide.data(), 65536);
  for (int i = 0; i < 65536; ++i) {
    float s = float16_to_float(all[i]);
    if (std::isnan(s)) ASSERT_TRUE(std::isnan(wide[i]));
    else ASSERT_EQ(wide[i], s) << i;
  }
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-70000.f, 70000.f);
  std::vector<float> f(10001);
  for (auto& x : f) x = dist(rng) * (rng() % 2 ? 1.f : 1e-6f);
  std::vector<uint16_t> h(f.size()), b(f.size());
  kernels::float32_to_float16(f.data(), h.data(), f.size());
  kernels::float32_to_bfloat16(f.data(), b.data(), f.size());
  for (size_t i = 0; i < f.size(); ++i) {
    ASSERT_EQ(h[i], float_to_float16(f[i])) << f[i];
    ASSERT_EQ(b[i], float_to_bfloat16(f[i])) << f[i];
  }
}

}  // namespace
}  // namespace korovod
