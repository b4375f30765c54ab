// Adasum of GPU tensors through the whole engine, on a fake GPU (host staging): the tensors go to
// host memory and back, and reduce as Horovod's NCCL build reduces them -- the ranks of each host
// summed, the hosts' sums combined by Adasum -- against a double-precision reference; and the
// layouts Horovod refuses, refused on every rank with the runtime going on.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "algorithms/testing/adasum_reference.h"
#include "core/testing/test_ranks.h"
#include "transport/common/testing/staged_runtime.h"

namespace korovod::stagingtest {
namespace {

using adasumtest::Vec;
using testing::run_ranks;

Vec input(int rank, int64_t n) {
  std::mt19937_64 gen(77 + static_cast<uint64_t>(rank));
  std::normal_distribution<double> d(0.25 * rank, 1.0);
  Vec v(static_cast<size_t>(n));
  for (double& x : v) x = d(gen);
  return v;
}

// What Horovod's AdasumGpuAllreduceOp computes: each host's ranks summed, then the Adasum tree
// over the hosts (hosts hold consecutive ranks), all scaled by prescale * postscale.
Vec expected(const std::vector<int>& host_of_rank, int64_t n, double scale) {
  std::vector<Vec> hosts;
  for (size_t r = 0; r < host_of_rank.size(); ++r) {
    const Vec v = input(static_cast<int>(r), n);
    if (static_cast<size_t>(host_of_rank[r]) == hosts.size()) hosts.emplace_back(v.size(), 0.0);
    for (size_t i = 0; i < v.size(); ++i) hosts.back()[i] += v[i];
  }
  Vec out = adasumtest::tree(hosts);
  for (double& x : out) x *= scale;
  return out;
}

TEST(StagingAdasum, GpuTensorsSumEachHostsRanksAndCombineTheHostsByAdasum) {
  const int64_t n = 1001;  // odd, so the halves differ in length at every level
  const std::vector<std::vector<int>> layouts = {
      {0, 1},                    // one rank per host: Adasum of every rank, as on CPU
      {0, 0, 1, 1},              // 2 hosts x 2
      {0, 0, 0, 0, 1, 1, 1, 1},  // 2 hosts x 4
      {0, 0, 1, 1, 2, 2, 3, 3},  // 4 hosts x 2
      {0, 0, 0, 0},              // one host: the plain sum (Horovod's single-node NCCL Adasum)
  };
  for (const auto& hosts : layouts) {
    const int size = static_cast<int>(hosts.size());
    SCOPED_TRACE(::testing::Message() << size << " ranks, last host " << hosts.back());
    const Vec want = expected(hosts, n, 0.5 * 3.0);
    auto world = std::make_shared<fake::FakeWorld>(size);
    auto mem = std::make_shared<fake::FakeDeviceMemory>();
    std::vector<StagedRuntime> ranks(static_cast<size_t>(size));
    std::vector<Vec> got(static_cast<size_t>(size));
    run_ranks(size, [&](int rank) {
      StagedRuntime& s = ranks[static_cast<size_t>(rank)];
      start(s, world, mem, rank, hosts);
      DeviceTensor t(*mem, n * sizeof(double));
      t.set(input(rank, n));
      const TensorView v = t.view(DataType::kFloat64, {n});
      Result<Handle> h = s.rt->allreduce("grad", v, v, ReduceOp::kAdasum, 0.5, 3.0);
      ASSERT_TRUE(h.is_ok()) << h.status().to_string();
      Status st = s.rt->wait(*h);
      ASSERT_TRUE(st.is_ok()) << st.to_string();
      got[static_cast<size_t>(rank)] = t.get<double>(n);
      EXPECT_GT(s.staging->copier()->copies_to_host(), 0) << "the tensor never left the fake GPU";
      EXPECT_TRUE(s.rt->shutdown().is_ok());
    });
    for (int r = 0; r < size; ++r) EXPECT_EQ(got[static_cast<size_t>(r)], got[0]) << "rank " << r << " differs";
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_NEAR(got[0][i], want[i], 1e-12 * (1 + std::abs(want[i]))) << "element " << i;
    }
  }
}

// Horovod's defining cases on 2 hosts x 1 rank, in float32 and float16: orthogonal vectors add,
// parallel ones average.
TEST(StagingAdasum, OrthogonalGpuTensorsAddAndParallelOnesAverage) {
  auto world = std::make_shared<fake::FakeWorld>(2);
  auto mem = std::make_shared<fake::FakeDeviceMemory>();
  std::vector<StagedRuntime> ranks(2);
  run_ranks(2, [&](int rank) {
    StagedRuntime& s = ranks[static_cast<size_t>(rank)];
    start(s, world, mem, rank, {0, 1});
    DeviceTensor ortho(*mem, 2 * sizeof(float));
    ortho.set(std::vector<float>{rank == 0 ? 3.f : 0.f, rank == 1 ? 5.f : 0.f});
    ASSERT_TRUE(s.rt->wait(*s.rt->allreduce("ortho", ortho.view(DataType::kFloat32, {2}),
                                            ortho.view(DataType::kFloat32, {2}), ReduceOp::kAdasum)).is_ok());
    EXPECT_EQ(ortho.get<float>(2), (std::vector<float>{3.f, 5.f}));
    // float16 1.0, 2.0 on rank 0 and 2.0, 4.0 on rank 1: parallel, so the mean 1.5, 3.0.
    DeviceTensor para(*mem, 2 * sizeof(uint16_t));
    para.set(rank == 0 ? std::vector<uint16_t>{0x3C00, 0x4000} : std::vector<uint16_t>{0x4000, 0x4400});
    ASSERT_TRUE(s.rt->wait(*s.rt->allreduce("para", para.view(DataType::kFloat16, {2}),
                                            para.view(DataType::kFloat16, {2}), ReduceOp::kAdasum)).is_ok());
    EXPECT_EQ(para.get<uint16_t>(2), (std::vector<uint16_t>{0x3E00, 0x4200}));
    EXPECT_TRUE(s.rt->shutdown().is_ok());
  });
}

// Where Horovod refuses GPU Adasum, every rank gets the same error naming the tensor, and the
// next collective runs.
TEST(StagingAdasum, LayoutsHorovodRefusesAreRefusedOnEveryRankAndTheRuntimeGoesOn) {
  struct Case {
    std::vector<int> hosts;
    int process_set;
    std::string error;
  };
  const std::vector<Case> cases = {
      {{0, 1, 0, 1}, kGlobalProcessSet, "needs each host's ranks to be consecutive (rank = host index * 2 + local rank)"},
      {{0, 0, 0, 1}, kGlobalProcessSet, "needs the same number of ranks on every host"},
      {{0, 0, 0, 0}, 1, "runs in the global process set only"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.error);
    auto world = std::make_shared<fake::FakeWorld>(4);
    auto mem = std::make_shared<fake::FakeDeviceMemory>();
    std::vector<StagedRuntime> ranks(4);
    run_ranks(4, [&](int rank) {
      StagedRuntime& s = ranks[static_cast<size_t>(rank)];
      start(s, world, mem, rank, c.hosts, {{0, 1}, {2, 3}});
      const int set = c.process_set == kGlobalProcessSet ? kGlobalProcessSet : (rank < 2 ? 1 : 2);
      DeviceTensor t(*mem, 4 * sizeof(float));
      t.set(std::vector<float>(4, 1.f));
      const TensorView v = t.view(DataType::kFloat32, {4});
      Status st = s.rt->wait(*s.rt->allreduce("grad", v, v, ReduceOp::kAdasum, 1.0, 1.0, set));
      EXPECT_EQ(st.code(), StatusCode::kPreconditionError) << st.to_string();
      EXPECT_NE(st.message().find("Tensor 'grad': Adasum of GPU tensors " + c.error), std::string::npos)
          << st.to_string();
      EXPECT_EQ(t.get<float>(4), std::vector<float>(4, 1.f)) << "a refused tensor was written";
      st = s.rt->wait(*s.rt->allreduce("after", v, v, ReduceOp::kSum, 1.0, 1.0, set));
      ASSERT_TRUE(st.is_ok()) << st.to_string();
      EXPECT_EQ(t.get<float>(4), std::vector<float>(4, set == kGlobalProcessSet ? 4.f : 2.f));
      // One rank's shutdown ends the job for all (Horovod's rule), so the ranks meet first: the
      // other process set's "after" may still be in flight when this one's has finished.
      ASSERT_TRUE(s.rt->wait(*s.rt->barrier()).is_ok());
      EXPECT_TRUE(s.rt->shutdown().is_ok());
    });
  }
}

}  // namespace
}  // namespace korovod::stagingtest
