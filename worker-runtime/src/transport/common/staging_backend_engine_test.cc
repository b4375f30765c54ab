// Host staging inside the whole engine: a Runtime per rank (N ranks as N threads over the fake
// transport) whose device backend is a StagingBackend on a fake GPU, so the process set hands it
// the set's CPU backend (ProcessSet's attach_host_plane) and the algorithms' device paths run
// through it: outputs the framework allocates on the device, outputs the runtime owns on the
// host, a joined rank's zeros, ready events, and rank 0's startup line.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "core/testing/test_ranks.h"
#include "korovod/runtime.h"
#include "transport/common/staging_backend.h"
#include "transport/common/testing/staged_runtime.h"
#include "transport/fake/fake_world.h"

namespace korovod::stagingtest {
namespace {

using testing::run_ranks;

TEST(StagingEngine, EveryCollectiveOnDeviceTensorsRunsThroughTheSetsHostPlane) {
  const int n = 3;
  auto world = std::make_shared<fake::FakeWorld>(n);
  auto mem = std::make_shared<fake::FakeDeviceMemory>();
  std::vector<StagedRuntime> ranks(n);
  run_ranks(n, [&](int rank) {
    StagedRuntime& s = ranks[rank];
    start(s, world, mem, rank);
    Runtime& rt = *s.rt;
    DeviceOutputs outputs(*mem);

    // Grouped allreduce (never fused for device tensors), Horovod's scales: (1 + 2 + 3) * 0.5 * 4.
    std::vector<std::unique_ptr<DeviceTensor>> g;
    std::vector<TensorView> views;
    for (int t = 0; t < 3; ++t) {
      g.push_back(std::make_unique<DeviceTensor>(*mem, 5 * sizeof(float)));
      g.back()->set(std::vector<float>(5, rank + 1.f));
      views.push_back(g.back()->view(DataType::kFloat32, {5}));
    }
    Result<std::vector<Handle>> hs = rt.grouped_allreduce({"g0", "g1", "g2"}, views, views, ReduceOp::kSum, 0.5, 4.0);
    ASSERT_TRUE(hs.is_ok()) << hs.status().to_string();
    for (Handle h : *hs) ASSERT_TRUE(rt.wait(h).is_ok());
    for (const auto& t : g) EXPECT_EQ(t->get<float>(5), std::vector<float>(5, 12.f));

    // Allgather, rank r sending r + 1 rows of 2: into device memory from the allocator, and
    // into handle-owned host memory without one.
    DeviceTensor ag(*mem, (rank + 1) * 2 * sizeof(int64_t));
    ag.set(std::vector<int64_t>((rank + 1) * 2, 7 * rank));
    const std::vector<int64_t> want_ag = {0, 0, 7, 7, 7, 7, 14, 14, 14, 14, 14, 14};
    for (bool on_device : {true, false}) {
      CollectiveArgs a;
      a.type = RequestType::kAllgather;
      a.name = on_device ? "ag.device" : "ag.owned";
      a.input = ag.view(DataType::kInt64, {rank + 1, 2});
      if (on_device) a.allocator = outputs.allocator(DataType::kInt64);
      Result<Handle> h = rt.enqueue(std::move(a));
      ASSERT_TRUE(h.is_ok() && rt.wait(*h).is_ok());
      OpOutput out = *rt.output(*h);
      EXPECT_EQ(out.shape, (std::vector<int64_t>{6, 2}));
      const auto* host = static_cast<const int64_t*>(out.data);
      const std::vector<int64_t> got =
          on_device ? device_values<int64_t>(*mem, out.data, 12) : std::vector<int64_t>(host, host + 12);
      EXPECT_EQ(got, want_ag);
      rt.release(*h);
    }

    // Broadcast from rank 2 of a bfloat16 tensor (bytes only).
    DeviceTensor bc(*mem, 6);
    bc.set(std::vector<uint16_t>(3, rank == 2 ? 0x3f80 : 0));
    CollectiveArgs b;
    b.type = RequestType::kBroadcast;
    b.name = "bc";
    b.input = b.output = bc.view(DataType::kBFloat16, {3});
    b.root_rank = 2;
    ASSERT_TRUE(run(rt, std::move(b)).is_ok());
    EXPECT_EQ(bc.get<uint16_t>(3), std::vector<uint16_t>(3, 0x3f80));

    // Alltoall: rank r sends k + 1 rows (valued 10 r + k) to rank k.
    std::vector<int32_t> rows;
    for (int k = 0; k < n; ++k) rows.insert(rows.end(), k + 1, 10 * rank + k);
    DeviceTensor a2a(*mem, rows.size() * sizeof(int32_t));
    a2a.set(rows);
    CollectiveArgs a;
    a.type = RequestType::kAlltoall;
    a.name = "a2a";
    a.input = a2a.view(DataType::kInt32, {static_cast<int64_t>(rows.size())});
    a.splits = {1, 2, 3};
    a.allocator = outputs.allocator(DataType::kInt32);
    Result<Handle> h = rt.enqueue(std::move(a));
    ASSERT_TRUE(h.is_ok() && rt.wait(*h).is_ok());
    OpOutput out = *rt.output(*h);
    EXPECT_EQ(out.received_splits, std::vector<int32_t>(n, rank + 1));
    std::vector<int32_t> want;
    for (int r = 0; r < n; ++r) want.insert(want.end(), rank + 1, 10 * r + rank);
    EXPECT_EQ(device_values<int32_t>(*mem, out.data, want.size()), want);
    rt.release(*h);

    // Reducescatter, 4 rows of one float: rows 2, 1, 1; Average of rank + row.
    DeviceTensor rs(*mem, 4 * sizeof(float));
    rs.set(std::vector<float>{0.f + rank, 1.f + rank, 2.f + rank, 3.f + rank});
    CollectiveArgs r;
    r.type = RequestType::kReducescatter;
    r.name = "rs";
    r.op = ReduceOp::kAverage;
    r.input = rs.view(DataType::kFloat32, {4});
    r.allocator = outputs.allocator(DataType::kFloat32);
    h = rt.enqueue(std::move(r));
    ASSERT_TRUE(h.is_ok() && rt.wait(*h).is_ok());
    out = *rt.output(*h);
    const std::vector<std::vector<float>> want_rs = {{1.f, 2.f}, {3.f}, {4.f}};
    EXPECT_EQ(device_values<float>(*mem, out.data, want_rs[rank].size()), want_rs[rank]);
    rt.release(*h);

    Result<Handle> bar = rt.barrier();
    ASSERT_TRUE(bar.is_ok() && rt.wait(*bar).is_ok());
    EXPECT_GT(s.staging->copier()->copies_to_host(), 0);
    EXPECT_GT(s.staging->copier()->copies_to_device(), 0);
    EXPECT_TRUE(rt.shutdown().is_ok());
  });
  ASSERT_FALSE(ranks[0].log.empty());
  EXPECT_NE(ranks[0].log[0].find("GPU data plane: host staging through FAKE (ranks 0 and 1 share fake GPU 0)"),
            std::string::npos)
      << ranks[0].log[0];
}

TEST(StagingEngine, AJoinedRankContributesZerosFromHostMemory) {
  const int n = 3;
  auto world = std::make_shared<fake::FakeWorld>(n);
  auto mem = std::make_shared<fake::FakeDeviceMemory>();
  std::vector<StagedRuntime> ranks(n);
  run_ranks(n, [&](int rank) {
    StagedRuntime& s = ranks[rank];
    start(s, world, mem, rank);
    Runtime& rt = *s.rt;
    if (rank == 2) {
      Result<Handle> j = rt.join(/*device=*/0);
      ASSERT_TRUE(j.is_ok() && rt.wait(*j).is_ok());
      // Rank 2 joined before the allreduce could finish, so one of the others joined last.
      const int last = rt.output(*j)->last_joined_rank;
      EXPECT_TRUE(last == 0 || last == 1) << last;
    } else {
      DeviceTensor t(*mem, 4 * sizeof(float));
      t.set(std::vector<float>(4, 3.f * (rank + 1)));
      Result<Handle> h = rt.allreduce("avg", t.view(DataType::kFloat32, {4}), t.view(DataType::kFloat32, {4}));
      ASSERT_TRUE(h.is_ok() && rt.wait(*h).is_ok());
      EXPECT_EQ(t.get<float>(4), std::vector<float>(4, 3.f));  // (3 + 6 + 0) / 3: the joined rank counts
      Result<Handle> j = rt.join(0);
      ASSERT_TRUE(j.is_ok() && rt.wait(*j).is_ok());
    }
    EXPECT_TRUE(rt.shutdown().is_ok());
  });
}

// Stands in for a CUDA event on the framework's stream: the producer writes the device tensor
// only after the engine started polling, then fires it.
class LateEvent final : public ReadyEvent {
 public:
  Result<bool> ready() const override {
    polls.fetch_add(1);
    return fired.load();
  }
  std::atomic<bool> fired{false};
  mutable std::atomic<int> polls{0};
};

TEST(StagingEngine, TheCopyToTheHostWaitsForTheReadyEvent) {
  const int n = 2;
  auto world = std::make_shared<fake::FakeWorld>(n);
  auto mem = std::make_shared<fake::FakeDeviceMemory>();
  std::vector<StagedRuntime> ranks(n);
  run_ranks(n, [&](int rank) {
    StagedRuntime& s = ranks[rank];
    start(s, world, mem, rank);
    DeviceTensor t(*mem, 1000 * sizeof(float));
    t.set(std::vector<float>(1000, -100.f));
    auto event = std::make_shared<LateEvent>();
    CollectiveArgs a;
    a.name = "late";
    a.op = ReduceOp::kSum;
    a.input = a.output = t.view(DataType::kFloat32, {1000});
    a.ready_event = event;
    Result<Handle> h = s.rt->enqueue(std::move(a));
    ASSERT_TRUE(h.is_ok());
    std::thread producer([&] {
      while (event->polls.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      t.set(std::vector<float>(1000, rank + 1.f));
      event->fired = true;
    });
    const Status st = s.rt->wait(*h);
    producer.join();
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    EXPECT_EQ(t.get<float>(1000), std::vector<float>(1000, 3.f));  // never the -100 placeholders
    EXPECT_TRUE(s.rt->shutdown().is_ok());
  });
}

}  // namespace
}  // namespace korovod::stagingtest
