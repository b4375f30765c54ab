// Host staging (StagingBackend) on its own, N ranks as N threads over the fake transport: the
// fake transport's backend is the host data plane, a FakeDeviceCopier the GPU. The fake GPU's
// memory is mapped PROT_NONE outside copies, so any host access to a device pointer crashes the
// test. Every collective is checked against explicit values or, for the dtype x op sweep,
// bitwise against the CPU path (the same host plane on host copies, scaled as the CPU
// algorithms scale).
#include <gtest/gtest.h>

#include <numeric>

#include "core/testing/test_ranks.h"
#include "kernels/kernels.h"
#include "korovod/config.h"
#include "transport/common/gpu_plane.h"
#include "transport/common/staging_backend.h"
#include "transport/common/testing/staging_helpers.h"
#include "transport/fake/fake_world.h"

namespace korovod::stagingtest {
namespace {

using testing::run_ranks;

// One member: its host plane, the staging backend on top of it, and the copier inside that.
struct Member {
  std::unique_ptr<Backend> host;
  fake::FakeDeviceCopier* copier = nullptr;  // owned by `staging`
  std::unique_ptr<StagingBackend> staging;
};

Member make_member(const std::shared_ptr<fake::FakeWorld>& world, const std::shared_ptr<fake::FakeDeviceMemory>& mem,
                   int n, int rank, bool attach = true) {
  std::vector<int> ranks(n);
  std::iota(ranks.begin(), ranks.end(), 0);
  Member m;
  m.host = std::move(fake::FakeBackendProvider(world, rank).create_backend(ranks, 0)).value();
  auto copier = std::make_unique<fake::FakeDeviceCopier>(mem);
  m.copier = copier.get();
  m.staging = std::make_unique<StagingBackend>(std::move(copier), rank, n, "test");
  if (attach) m.staging->attach_host_plane(*m.host);
  return m;
}

int small(int64_t i, int rank) { return static_cast<int>((i + rank) % 3) + 1; }

// The CPU path's allreduce on host memory: prescale copy, host allreduce (Average as Sum), then
// postscale (divided by the size for Average).
std::vector<std::byte> cpu_allreduce(Backend& host, std::vector<std::byte> in, DataType dtype, ReduceOp op, double pre,
                                     double post) {
  const int64_t count = static_cast<int64_t>(in.size()) / element_size(dtype);
  kernels::scale(dtype, in.data(), count, pre);
  const ReduceOp wire = op == ReduceOp::kAverage ? ReduceOp::kSum : op;
  EXPECT_TRUE(host.allreduce(in.data(), in.data(), count, dtype, wire).is_ok());
  kernels::scale(dtype, in.data(), count, op == ReduceOp::kAverage ? post / host.size() : post);
  return in;
}

TEST(StagingBackend, AllreduceOfEveryDtypeAndOpEqualsTheCpuPathBitwise) {
  const int n = 3;
  auto world = std::make_shared<fake::FakeWorld>(n);
  auto mem = std::make_shared<fake::FakeDeviceMemory>();
  run_ranks(n, [&](int rank) {
    Member m = make_member(world, mem, n, rank);
    std::vector<int> everyone = {0, 1, 2};
    auto reference = std::move(fake::FakeBackendProvider(world, rank).create_backend(everyone, 1)).value();
    const int64_t count = 37;
    for (DataType dtype : kAllTypes) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
        for (auto [pre, post] : {std::pair{1.0, 1.0}, std::pair{0.5, 3.0}}) {
          for (bool in_place : {true, false}) {
            const std::vector<std::byte> in = typed(dtype, count, small, rank);
            DeviceTensor send(*mem, in.size()), recv(*mem, in.size());
            send.set_bytes(in);
            void* out = in_place ? send.data() : recv.data();
            Status s = m.staging->allreduce_scaled(send.data(), out, count, dtype, op, pre, post);
            ASSERT_TRUE(s.is_ok()) << s.to_string();
            const std::vector<std::byte> got = (in_place ? send : recv).get_bytes(in.size());
            EXPECT_EQ(got, cpu_allreduce(*reference, in, dtype, op, pre, post))
                << dtype_name(dtype) << " " << reduce_op_name(op) << " pre " << pre << " in place " << in_place;
            if (!in_place) {
              EXPECT_EQ(send.get_bytes(in.size()), in) << "the input must stay as it was";
            }
          }
        }
      }
    }
  });
}

TEST(StagingBackend, AllreduceValuesAndOneCopyEachWay) {
  const int n = 2;
  auto world = std::make_shared<fake::FakeWorld>(n);
  auto mem = std::make_shared<fake::FakeDeviceMemory>();
  run_ranks(n, [&](int rank) {
    Member m = make_member(world, mem, n, rank);
    DeviceTensor t(*mem, 4 * sizeof(float));
    t.set(std::vector<float>{1.f + rank, 2.f, -3.f, 10.f * rank});
    // Average, prescale 2, postscale 0.5: (1 + 2) * 2 * 0.5 / 2 = 1.5, ...
    ASSERT_TRUE(m.staging->allreduce_scaled(t.data(), t.data(), 4, DataType::kFloat32, ReduceOp::kAverage, 2.0, 0.5)
                    .is_ok());
    EXPECT_EQ(t.get<float>(4), (std::vector<float>{1.5f, 2.f, -3.f, 5.f}));
    EXPECT_EQ(m.copier->copies_to_host(), 1);
    EXPECT_EQ(m.copier->copies_to_device(), 1);
    // int32 Sum of 2^30 + 2^30 wraps, as on the CPU path.
    DeviceTensor i(*mem, sizeof(int32_t));
    i.set(std::vector<int32_t>{1 << 30});
    ASSERT_TRUE(m.staging->allreduce(i.data(), i.data(), 1, DataType::kInt32, ReduceOp::kSum).is_ok());
    EXPECT_EQ(i.get<int32_t>(1)[0], static_cast<int32_t>(uint32_t{1} << 31));
  });
}

TEST(StagingBackend, AllgatherUnevenRowsIntoDeviceOrHostOutputs) {
  const int n = 3;
  auto world = std::make_shared<fake::FakeWorld>(n);
  auto mem = std::make_shared<fake::FakeDeviceMemory>();
  run_ranks(n, [&](int rank) {
    Member m = make_member(world, mem, n, rank);
    // Rank r sends r + 1 values 10 r, 10 r + 1, ...; rank 2 sends nothing from host memory (a
    // joined rank's share) in the second round.
    const std::vector<int64_t> bytes = {1 * 8, 2 * 8, 3 * 8};
    std::vector<double> mine(rank + 1), want;
    for (int r = 0; r < n; ++r) {
      for (int i = 0; i <= r; ++i) want.push_back(10 * r + i);
    }
    std::iota(mine.begin(), mine.end(), 10.0 * rank);
    DeviceTensor in(*mem, mine.size() * 8), out(*mem, 6 * 8);
    in.set(mine);
    ASSERT_TRUE(m.staging->allgatherv(in.data(), bytes[rank], out.data(), bytes).is_ok());
    EXPECT_EQ(out.get<double>(6), want);
    std::vector<double> host_out(6, -1);
    ASSERT_TRUE(m.staging->allgatherv(in.data(), bytes[rank], host_out.data(), bytes).is_ok());
    EXPECT_EQ(host_out, want);
    const std::vector<int64_t> no_rank2 = {8, 16, 0};
    std::vector<double> dummy(1, 0.0);
    Status s = rank == 2 ? m.staging->allgatherv(dummy.data(), 0, out.data(), no_rank2)
                         : m.staging->allgatherv(in.data(), no_rank2[rank], out.data(), no_rank2);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    EXPECT_EQ(out.get<double>(3), (std::vector<double>{0, 10, 11}));
  });
}

TEST(StagingBackend, BroadcastCopiesInAtTheRootAndOutElsewhere) {
  const int n = 3, root = 1;
  auto world = std::make_shared<fake::FakeWorld>(n);
  auto mem = std::make_shared<fake::FakeDeviceMemory>();
  run_ranks(n, [&](int rank) {
    Member m = make_member(world, mem, n, rank);
    DeviceTensor t(*mem, 5);
    t.set(std::vector<uint8_t>(5, rank == root ? 42 : 0));
    ASSERT_TRUE(m.staging->broadcast(t.data(), 5, root).is_ok());
    EXPECT_EQ(t.get<uint8_t>(5), std::vector<uint8_t>(5, 42));
    EXPECT_EQ(m.copier->copies_to_host(), rank == root ? 1 : 0);
    EXPECT_EQ(m.copier->copies_to_device(), rank == root ? 0 : 1);
  });
}

TEST(StagingBackend, AlltoallWithSplitsAndHostSplitCountsPassThrough) {
  const int n = 3;
  auto world = std::make_shared<fake::FakeWorld>(n, std::chrono::seconds(5));
  auto mem = std::make_shared<fake::FakeDeviceMemory>();
  run_ranks(n, [&](int rank) {
    Member m = make_member(world, mem, n, rank);
    // The algorithm first exchanges split counts in host memory: no staging for those.
    std::vector<int32_t> splits = {rank, 1, 0}, received(n);
    const std::vector<int64_t> four(n, 4);
    ASSERT_TRUE(m.staging->alltoallv(splits.data(), four, received.data(), four).is_ok());
    const std::vector<std::vector<int32_t>> want_splits = {{0, 1, 2}, {1, 1, 1}, {0, 0, 0}};
    EXPECT_EQ(received, want_splits[rank]);
    EXPECT_EQ(m.copier->copies_to_host() + m.copier->copies_to_device(), 0);
    // Rank r sends r int32s valued 100 r to rank 0 and r valued 100 r + 1 to rank 1, none to
    // rank 2: rank 0 sends nothing, rank 2 receives nothing, yet both take part.
    std::vector<int32_t> mine(rank, 100 * rank);
    mine.insert(mine.end(), rank, 100 * rank + 1);
    const std::vector<int64_t> send_bytes = {4 * rank, 4 * rank, 0};
    std::vector<int64_t> recv_bytes(n);
    for (int r = 0; r < n; ++r) recv_bytes[r] = rank == 2 ? 0 : 4 * r;
    DeviceTensor in(*mem, 16), out(*mem, 16);
    in.set(mine);
    ASSERT_TRUE(m.staging->alltoallv(in.data(), send_bytes, out.data(), recv_bytes).is_ok());
    const std::vector<std::vector<int32_t>> want = {{100, 200, 200}, {101, 201, 201}, {}};
    EXPECT_EQ(out.get<int32_t>(want[rank].size()), want[rank]);
  });
}

TEST(StagingBackend, ReducescatterUnevenWithScalesAndAverage) {
  const int n = 3;
  auto world = std::make_shared<fake::FakeWorld>(n);
  auto mem = std::make_shared<fake::FakeDeviceMemory>();
  run_ranks(n, [&](int rank) {
    Member m = make_member(world, mem, n, rank);
    const std::vector<int64_t> counts = {3, 2, 2};  // 7 rows of one float, Horovod's split
    std::vector<float> mine(7);
    for (int i = 0; i < 7; ++i) mine[i] = static_cast<float>(i + rank);
    DeviceTensor in(*mem, 7 * 4), out(*mem, 3 * 4);
    in.set(mine);
    // Average with prescale 2, postscale 4: (3 i + 3) * 2 * 4 / 3 = 8 (i + 1).
    ASSERT_TRUE(m.staging->reducescatter_scaled(in.data(), out.data(), counts, DataType::kFloat32, ReduceOp::kAverage,
                                                2.0, 4.0)
                    .is_ok());
    const int first = rank == 0 ? 0 : rank == 1 ? 3 : 5;
    std::vector<float> want;
    for (int i = first; i < first + counts[rank]; ++i) want.push_back(8.f * (i + 1));
    EXPECT_EQ(out.get<float>(want.size()), want);
    EXPECT_EQ(in.get<float>(7), mine) << "the prescale must not touch the input";
    // From host memory (the CPU path never sends that here, but the backend takes any pointer).
    std::vector<float> host_in = mine;
    ASSERT_TRUE(m.staging->reducescatter_scaled(host_in.data(), out.data(), counts, DataType::kFloat32,
                                                ReduceOp::kAverage, 2.0, 4.0)
                    .is_ok());
    EXPECT_EQ(out.get<float>(want.size()), want);
    EXPECT_EQ(host_in, mine) << "the prescale must not touch the input";
  });
}

TEST(StagingBackend, EmptyTensorsCopyNothingAndBarrierAndCopyWork) {
  const int n = 2;
  auto world = std::make_shared<fake::FakeWorld>(n);
  auto mem = std::make_shared<fake::FakeDeviceMemory>();
  run_ranks(n, [&](int rank) {
    Member m = make_member(world, mem, n, rank);
    DeviceTensor a(*mem, 16), b(*mem, 16);
    EXPECT_TRUE(m.staging->allreduce(a.data(), a.data(), 0, DataType::kFloat32, ReduceOp::kSum).is_ok());
    EXPECT_TRUE(m.staging->broadcast(a.data(), 0, 0).is_ok());
    EXPECT_TRUE(m.staging->allgatherv(a.data(), 0, b.data(), {0, 0}).is_ok());
    EXPECT_TRUE(m.staging->reducescatter(a.data(), b.data(), {0, 0}, DataType::kInt8, ReduceOp::kSum).is_ok());
    EXPECT_EQ(m.copier->copies_to_host() + m.copier->copies_to_device(), 0);
    EXPECT_TRUE(m.staging->barrier().is_ok());
    a.set(std::vector<int32_t>{1, 2, 3, 4 + rank});
    ASSERT_TRUE(m.staging->copy(b.data(), a.data(), 16).is_ok());
    EXPECT_EQ(b.get<int32_t>(4), (std::vector<int32_t>{1, 2, 3, 4 + rank}));
    EXPECT_EQ(m.staging->name(), "FAKE");
    EXPECT_EQ(m.staging->description(), "host staging through FAKE (test)");
  });
}

TEST(StagingBackend, WithoutAHostPlaneEveryCollectiveFailsTheSameWay) {
  auto world = std::make_shared<fake::FakeWorld>(1);
  auto mem = std::make_shared<fake::FakeDeviceMemory>();
  Member m = make_member(world, mem, 1, 0, /*attach=*/false);
  DeviceTensor t(*mem, 8);
  Status s = m.staging->allreduce(t.data(), t.data(), 2, DataType::kFloat32, ReduceOp::kSum);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("allreduce: this process set has no host data plane"), std::string::npos) << s.message();
  EXPECT_FALSE(m.staging->barrier().is_ok());
  EXPECT_EQ(m.staging->description(), "host staging through no host data plane (test)");
}

TEST(StagingBackend, AFailedCopyToTheHostFailsThatRankAndThePeersTimeOut) {
  const int n = 2;
  auto world = std::make_shared<fake::FakeWorld>(n, std::chrono::milliseconds(300));
  auto mem = std::make_shared<fake::FakeDeviceMemory>();
  std::vector<Status> got(n);
  run_ranks(n, [&](int rank) {
    Member m = make_member(world, mem, n, rank);
    DeviceTensor t(*mem, 64);
    if (rank == 1) m.copier->fail_copy_after(0, "an illegal memory access");
    got[rank] = m.staging->allreduce(t.data(), t.data(), 16, DataType::kFloat32, ReduceOp::kSum);
  });
  EXPECT_EQ(got[1].code(), StatusCode::kUnknownError);  // stops the engine: ranks are out of step
  EXPECT_NE(got[1].message().find("host staging of a GPU allreduce: copy of 64 bytes to the host: fake copy failed: "
                                  "an illegal memory access"),
            std::string::npos)
      << got[1].message();
  EXPECT_EQ(got[0].code(), StatusCode::kAborted) << got[0].to_string();  // the fake plane's timeout
}

TEST(StagingBackend, AFailedCopyBackFailsOnlyThatRank) {
  const int n = 2;
  auto world = std::make_shared<fake::FakeWorld>(n);
  auto mem = std::make_shared<fake::FakeDeviceMemory>();
  std::vector<Status> got(n);
  run_ranks(n, [&](int rank) {
    Member m = make_member(world, mem, n, rank);
    DeviceTensor in(*mem, 8), out(*mem, 16);
    in.set(std::vector<float>{1.f, 2.f});
    if (rank == 0) m.copier->fail_copy_after(1, "device lost");  // the copy in works, the copy back not
    got[rank] = m.staging->allgatherv(in.data(), 8, out.data(), {8, 8});
  });
  EXPECT_EQ(got[0].code(), StatusCode::kUnknownError);
  EXPECT_NE(got[0].message().find("allgather: copy of 16 bytes back to the device: fake copy failed: device lost"),
            std::string::npos)
      << got[0].message();
  EXPECT_TRUE(got[1].is_ok()) << got[1].to_string();
}

TEST(FakeDeviceMemory, TheHostCannotTouchDeviceMemoryDirectly) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto mem = std::make_shared<fake::FakeDeviceMemory>();
  void* p = mem->allocate(16);
  EXPECT_DEATH({ std::memset(p, 1, 16); }, "");
  int host = 7;
  mem->upload(p, &host, sizeof host);
  int back = 0;
  mem->download(&back, p, sizeof back);
  EXPECT_EQ(back, 7);
  EXPECT_TRUE(mem->contains(static_cast<char*>(p) + 15));
  EXPECT_FALSE(mem->contains(&host));
  mem->free(p);
}

TEST(GpuPlane, SharedGpusOnOneHostChooseStagingUnlessForced) {
  const std::vector<int> ranks = {0, 1, 2, 3};
  const std::vector<GpuIdentity> one_each = {{"a", "0000:01:00.0"}, {"a", "0000:02:00.0"}, {"b", "0000:01:00.0"},
                                             {"b", "0000:02:00.0"}};
  EXPECT_FALSE(choose_gpu_plane(GpuOperations::kAuto, one_each, ranks).staging);  // same bus id, other host
  const std::vector<GpuIdentity> shared = {{"a", "0000:01:00.0"}, {"a", "0000:01:00.0"}, {"b", "0000:01:00.0"},
                                           {"b", ""}};
  GpuPlaneChoice c = choose_gpu_plane(GpuOperations::kAuto, shared, ranks);
  EXPECT_TRUE(c.staging);
  EXPECT_EQ(c.why, "ranks 0 and 1 share GPU 0000:01:00.0, which NCCL refuses");
  EXPECT_FALSE(choose_gpu_plane(GpuOperations::kNccl, shared, ranks).staging);
  EXPECT_EQ(choose_gpu_plane(GpuOperations::kNccl, shared, ranks).why, "KOROVOD_GPU_OPERATIONS=nccl");
  c = choose_gpu_plane(GpuOperations::kStaging, one_each, ranks);
  EXPECT_TRUE(c.staging);
  EXPECT_EQ(c.why, "KOROVOD_GPU_OPERATIONS=staging");
  // Members without a GPU share nothing; labels are the global ranks.
  EXPECT_EQ(shared_gpus({{"h", ""}, {"h", ""}}, {4, 9}), "");
  EXPECT_EQ(shared_gpus({{"h", "x"}, {"h", "y"}, {"h", "x"}, {"h", "x"}, {"h", "y"}}, {1, 3, 5, 7, 9}),
            "ranks 1, 5, 7 share GPU x; ranks 3 and 9 share GPU y");
}

TEST(GpuPlane, IdentityLinesRoundTripWithSpacesInTheHost) {
  const GpuIdentity id{"node 7/boot-id", "0000:3B:00.0"};
  const GpuIdentity back = parse_gpu_identity(gpu_identity_line(id));
  EXPECT_EQ(back.host, id.host);
  EXPECT_EQ(back.gpu, id.gpu);
  EXPECT_EQ(parse_gpu_identity(gpu_identity_line({"h", ""})).gpu, "");
  EXPECT_EQ(gpu_operations_from(""), GpuOperations::kAuto);
  EXPECT_EQ(gpu_operations_from("nccl"), GpuOperations::kNccl);
  EXPECT_EQ(gpu_operations_from("staging"), GpuOperations::kStaging);
}

TEST(GpuPlane, ConfigReadsKorovodAndHorovodGpuOperations) {
  EXPECT_EQ(parse_config({})->gpu_operations, "");
  EXPECT_EQ(parse_config({{"KOROVOD_GPU_OPERATIONS", "staging"}})->gpu_operations, "staging");
  EXPECT_EQ(parse_config({{"HOROVOD_GPU_OPERATIONS", "MPI"}})->gpu_operations, "staging");  // Horovod's name
  EXPECT_EQ(parse_config({{"HOROVOD_GPU_OPERATIONS", "NCCL"}})->gpu_operations, "nccl");
  EXPECT_EQ(parse_config({{"KOROVOD_GPU_OPERATIONS", "nccl"}, {"HOROVOD_GPU_OPERATIONS", "MPI"}})->gpu_operations,
            "nccl");
  Result<Config> bad = parse_config({{"HOROVOD_GPU_OPERATIONS", "DDL"}});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("HOROVOD_GPU_OPERATIONS"), std::string::npos) << bad.status().message();
}

}  // namespace
}  // namespace korovod::stagingtest
