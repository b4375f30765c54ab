// Adasum through the whole engine (N ranks as N threads over the fake transport), against a
// reference that combines the ranks' vectors in double, pairwise up the same binary tree: (0,1),
// (2,3), ..., then those pairs, and so on.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <functional>
#include <random>

#include "algorithms/testing/adasum_reference.h"
#include "core/testing/test_ranks.h"
#include "korovod/runtime.h"
#include "transport/fake/fake_ranks.h"
#include "transport/fake/fake_world.h"

namespace korovod {
namespace {

using testing::fast_config;
using testing::make_fake_runtime;
using testing::run_ranks;
using adasumtest::Vec;
using adasumtest::tree;

// Rank r's tensor t: fixed pseudo-random values, so every thread can rebuild any rank's input.
Vec input(int rank, size_t tensor, int64_t n) {
  std::mt19937_64 gen(1000 * static_cast<uint64_t>(rank) + tensor);
  std::normal_distribution<double> d(0.5 * static_cast<double>(tensor), 1.0);
  Vec v(static_cast<size_t>(n));
  for (double& x : v) x = d(gen);
  return v;
}

// body(rank, its Runtime) on n ranks as n threads over one fake world; each runtime shuts down after.
void on_ranks(int n, const std::function<void(int rank, Runtime& rt)>& body) {
  auto world = std::make_shared<fake::FakeWorld>(n);
  run_ranks(n, [&](int rank) {
    auto rt = make_fake_runtime(world, rank, fast_config());
    ASSERT_NE(rt, nullptr);
    body(rank, *rt);
    EXPECT_TRUE(rt->shutdown().is_ok());
  });
}

TensorView f64(Vec& v) { return TensorView{v.data(), DataType::kFloat64, {static_cast<int64_t>(v.size())}, kCpuDevice}; }

// Several tensors (empty, shorter than the number of ranks, odd, large) in one fused response,
// and each one alone: every rank gets the reference's values, and all ranks the same bits.
TEST(Adasum, MatchesThePairwiseTreeOnEverySizeFusedAndAlone) {
  const std::vector<int64_t> lengths = {0, 1, 3, 17, 1000, 4097};
  for (int n : {1, 2, 4, 8}) {
    SCOPED_TRACE("ranks " + std::to_string(n));
    std::vector<Vec> expect;
    for (size_t t = 0; t < lengths.size(); ++t) {
      std::vector<Vec> per_rank;
      for (int r = 0; r < n; ++r) per_rank.push_back(input(r, t, lengths[t]));
      expect.push_back(tree(per_rank));
    }
    std::vector<std::vector<Vec>> got(static_cast<size_t>(n)), alones(static_cast<size_t>(n));
    on_ranks(n, [&](int rank, Runtime& rt) {
      std::vector<Vec> in, out(lengths.size());
      std::vector<std::string> names;
      std::vector<TensorView> iv, ov;
      for (size_t t = 0; t < lengths.size(); ++t) {
        in.push_back(input(rank, t, lengths[t]));
        out[t].assign(in[t].size(), -7.0);
        names.push_back("fused." + std::to_string(t));
      }
      for (size_t t = 0; t < lengths.size(); ++t) iv.push_back(f64(in[t])), ov.push_back(f64(out[t]));
      auto hs = rt.grouped_allreduce(names, iv, ov, ReduceOp::kAdasum);
      ASSERT_TRUE(hs.is_ok()) << hs.status().to_string();
      for (Handle h : *hs) ASSERT_TRUE(rt.wait(h).is_ok());
      for (size_t t = 0; t < lengths.size(); ++t) {
        Vec alone = in[t];  // in place, one tensor: the output is the work buffer
        auto h = rt.allreduce("alone." + std::to_string(t), f64(alone), f64(alone), ReduceOp::kAdasum);
        ASSERT_TRUE(h.is_ok()) << h.status().to_string();
        ASSERT_TRUE(rt.wait(*h).is_ok());
        alones[static_cast<size_t>(rank)].push_back(alone);
      }
      got[static_cast<size_t>(rank)] = out;
    });
    // Fused and alone split the vector at different places, so their sums round differently.
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(got[static_cast<size_t>(r)], got[0]) << "fused: rank " << r << " differs from rank 0";
      EXPECT_EQ(alones[static_cast<size_t>(r)], alones[0]) << "alone: rank " << r << " differs from rank 0";
    }
    for (const auto* result : {&got[0], &alones[0]}) {
      for (size_t t = 0; t < lengths.size(); ++t) {
        ASSERT_EQ((*result)[t].size(), expect[t].size());
        for (size_t i = 0; i < expect[t].size(); ++i) {
          ASSERT_NEAR((*result)[t][i], expect[t][i], 1e-12 * (1 + std::abs(expect[t][i])))
              << (result == &got[0] ? "fused" : "alone") << " tensor " << t << "[" << i << "]";
        }
      }
    }
  }
}

// Horovod's two defining cases (its test_adasum_pytorch.py): orthogonal vectors add, parallel
// ones average; float32, float16 and bfloat16, with prescale and postscale applied around it.
TEST(Adasum, OrthogonalVectorsAddAndParallelOnesAverageInEveryFloatType) {
  const int n = 4;
  on_ranks(n, [&](int rank, Runtime& rt) {
    // Orthogonal: rank r holds (r + 1) e_r; parallel: rank r holds (r + 1) * (1, 2, 3, 4).
    std::vector<float> ortho(n, 0.f), para(n);
    ortho[rank] = static_cast<float>(rank + 1);
    for (int i = 0; i < n; ++i) para[i] = static_cast<float>((rank + 1) * (i + 1));
    auto f32 = [](std::vector<float>& v) { return TensorView{v.data(), DataType::kFloat32, {4}, kCpuDevice}; };
    ASSERT_TRUE(rt.wait(*rt.allreduce("ortho", f32(ortho), f32(ortho), ReduceOp::kAdasum)).is_ok());
    for (int i = 0; i < n; ++i) EXPECT_FLOAT_EQ(ortho[i], static_cast<float>(i + 1));
    ASSERT_TRUE(rt.wait(*rt.allreduce("para", f32(para), f32(para), ReduceOp::kAdasum, 2.0, 0.25)).is_ok());
    for (int i = 0; i < n; ++i) EXPECT_FLOAT_EQ(para[i], 2.5f * static_cast<float>(i + 1) * 2.0f * 0.25f);
    for (DataType half : {DataType::kFloat16, DataType::kBFloat16}) {
      // 1.0 and 3.0 in the half type, on every rank: the mean of equal vectors is that vector.
      const uint16_t one = half == DataType::kFloat16 ? 0x3C00 : 0x3F80;
      const uint16_t three = half == DataType::kFloat16 ? 0x4200 : 0x4040;
      std::vector<uint16_t> v = {one, three, one, three};
      TensorView t{v.data(), half, {4}, kCpuDevice};
      ASSERT_TRUE(rt.wait(*rt.allreduce(std::string("half.") + std::string(dtype_name(half)), t, t,
                                          ReduceOp::kAdasum)).is_ok());
      EXPECT_EQ(v, (std::vector<uint16_t>{one, three, one, three})) << dtype_name(half);
    }
  });
}

// Refused in negotiation, so every rank gets the error from wait() and the runtime goes on.
TEST(Adasum, IntegerTensorsAndOtherCollectivesAreRefusedOnEveryRankNamingTheTensor) {
  const int n = 2;
  on_ranks(n, [&](int, Runtime& rt) {
    std::vector<int32_t> i(4, 1);
    TensorView t{i.data(), DataType::kInt32, {4}, kCpuDevice};
    Result<Handle> h = rt.allreduce("steps", t, t, ReduceOp::kAdasum);
    ASSERT_TRUE(h.is_ok()) << h.status().to_string();
    Status s = rt.wait(*h);
    EXPECT_NE(s.message().find("Tensor 'steps': Adasum reduces float16, bfloat16, float32 and float64 tensors, "
                               "not int32"), std::string::npos) << s.to_string();
    std::vector<float> f(4, 1.f);
    h = rt.reducescatter("rs", TensorView{f.data(), DataType::kFloat32, {4}, kCpuDevice}, ReduceOp::kAdasum);
    ASSERT_TRUE(h.is_ok()) << h.status().to_string();
    s = rt.wait(*h);
    EXPECT_NE(s.message().find("Tensor 'rs': Adasum is an allreduce op; REDUCESCATTER does not take it"),
              std::string::npos) << s.to_string();
    ASSERT_TRUE(rt.wait(*rt.allreduce("after", TensorView{f.data(), DataType::kFloat32, {4}, kCpuDevice},
                                        TensorView{f.data(), DataType::kFloat32, {4}, kCpuDevice},
                                        ReduceOp::kAdasum)).is_ok());
    EXPECT_EQ(f, std::vector<float>(4, 1.f));
  });
}

// A rank that has joined contributes zeros, which Adasum leaves out (a zero vector's coefficient
// pair is (1, 1)): the others' result is the tree over the ranks that did submit.
TEST(Adasum, AJoinedRanksZerosLeaveTheOthersResult) {
  const int n = 2;
  on_ranks(n, [&](int rank, Runtime& rt) {
    if (rank == 1) {
      ASSERT_TRUE(rt.wait(*rt.join()).is_ok());
    } else {
      std::vector<double> v = {1.0, -2.0, 0.5};
      ASSERT_TRUE(rt.wait(*rt.allreduce("after_join", f64(v), f64(v), ReduceOp::kAdasum)).is_ok());
      EXPECT_EQ(v, (std::vector<double>{1.0, -2.0, 0.5}));
      ASSERT_TRUE(rt.wait(*rt.join()).is_ok());
    }
  });
}

// As Horovod: any tree over 3 ranks is unbalanced, so parallel vectors would not average.
TEST(Adasum, AProcessSetWhoseSizeIsNotAPowerOf2IsRefusedOnEveryRank) {
  const int n = 3;
  on_ranks(n, [&](int, Runtime& rt) {
    std::vector<float> v(5, 1.f);
    TensorView t{v.data(), DataType::kFloat32, {5}, kCpuDevice};
    Status s = rt.wait(*rt.allreduce("three", t, t, ReduceOp::kAdasum));
    EXPECT_NE(s.message().find("Tensor 'three': Adasum needs a power-of-2 number of ranks, as Horovod's does; "
                               "this process set has 3."), std::string::npos) << s.to_string();
    ASSERT_TRUE(rt.wait(*rt.allreduce("sum_after", t, t, ReduceOp::kSum)).is_ok());
    EXPECT_EQ(v, std::vector<float>(5, 3.f));
  });
}

}  // namespace
}  // namespace korovod
