// ReadyEvent (Horovod's ready events): the engine waits for a tensor's event after negotiation and
// before the data plane reads it; a failed event or one that never fires ends with an error that
// names the tensor. N ranks as N threads over the fake transport.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "core/testing/test_ranks.h"
#include "korovod/cuda.h"
#include "korovod/runtime.h"
#include "transport/fake/fake_ranks.h"
#include "transport/fake/fake_world.h"

namespace korovod {
namespace {

using testing::fast_config;
using testing::make_fake_runtime;
using testing::run_ranks;

// Stands in for a CUDA event on the framework's stream: not ready until `fire` is called.
class ManualEvent final : public ReadyEvent {
 public:
  Result<bool> ready() const override {
    polls.fetch_add(1);
    if (failed.load()) return Status::unknown("simulated: an illegal memory access was encountered");
    return fired.load();
  }
  void fire() { fired = true; }
  std::atomic<bool> fired{false}, failed{false};
  mutable std::atomic<int> polls{0};
};

CollectiveArgs allreduce_args(const std::string& name, std::vector<float>& in, std::vector<float>& out) {
  CollectiveArgs a;
  a.name = name;
  a.input = TensorView{in.data(), DataType::kFloat32, {static_cast<int64_t>(in.size())}, kCpuDevice};
  a.output = TensorView{out.data(), DataType::kFloat32, {static_cast<int64_t>(out.size())}, kCpuDevice};
  a.op = ReduceOp::kSum;
  return a;
}

TEST(ReadyEvent, CollectiveReadsTheInputOnlyAfterTheEventFires) {
  const int n = 2;
  auto world = std::make_shared<fake::FakeWorld>(n);
  run_ranks(n, [&](int rank) {
    auto rt = make_fake_runtime(world, rank, fast_config(10));
    // The "framework" has not written the input yet when the tensor is submitted; it writes it
    // only once the engine has started waiting on the event (polled it), then fires the event
    // (as a kernel on its stream would): the collective must see the written values.
    std::vector<float> in(1000, -100.f), out(1000, 0.f);
    auto event = std::make_shared<ManualEvent>();
    CollectiveArgs a = allreduce_args("late", in, out);
    a.ready_event = event;
    auto h = rt->enqueue(std::move(a));
    ASSERT_TRUE(h.is_ok()) << h.status().to_string();
    std::thread producer([&] {
      while (event->polls.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      std::fill(in.begin(), in.end(), static_cast<float>(rank + 1));
      event->fire();
    });
    Status st = rt->wait(*h);
    producer.join();
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    for (float v : out) ASSERT_EQ(v, 3.f);  // 1 + 2, never the -100 placeholders
    EXPECT_GT(event->polls.load(), 1);     // polled before the data was there, and again after
    EXPECT_TRUE(rt->shutdown().is_ok());
  });
}

TEST(ReadyEvent, FailedEventEndsTheOperationWithAnErrorNamingTheTensor) {
  const int n = 2;
  auto world = std::make_shared<fake::FakeWorld>(n);
  run_ranks(n, [&](int rank) {
    auto rt = make_fake_runtime(world, rank, fast_config(1));
    std::vector<float> in(8, 1.f), out(8, 0.f);
    CollectiveArgs a = allreduce_args("broken", in, out);
    if (rank == 0) {
      auto event = std::make_shared<ManualEvent>();
      event->failed = true;
      a.ready_event = event;
    }
    auto h = rt->enqueue(std::move(a));
    ASSERT_TRUE(h.is_ok());
    Status st = rt->wait(*h);
    ASSERT_FALSE(st.is_ok());
    if (rank == 0) {
      EXPECT_NE(st.message().find("tensor 'broken': its ready event failed"), std::string::npos) << st.message();
      EXPECT_NE(st.message().find("illegal memory access"), std::string::npos) << st.message();
    }
    (void)rt->shutdown();
  });
}

TEST(ReadyEvent, EventThatNeverFiresIsBoundedByHalfTheCollectiveTimeout) {
  const int n = 2;
  auto world = std::make_shared<fake::FakeWorld>(n);
  run_ranks(n, [&](int rank) {
    auto rt = make_fake_runtime(world, rank, fast_config(2));  // a ready event gets half of it
    std::vector<float> in(8, 1.f), out(8, 0.f);
    CollectiveArgs a = allreduce_args("never", in, out);
    a.ready_event = std::make_shared<ManualEvent>();
    const auto start = std::chrono::steady_clock::now();
    auto h = rt->enqueue(std::move(a));
    ASSERT_TRUE(h.is_ok());
    Status st = rt->wait(*h);
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_FALSE(st.is_ok());
    EXPECT_LT(waited, 4.0);
    EXPECT_NE(st.message().find("tensor 'never': its ready event did not fire within 1 s"), std::string::npos)
        << st.message();
    (void)rt->shutdown();
  });
}

TEST(ReadyEvent, CudaEventsNeedACudaBuildAndADevice) {
  // Where CUDA is missing (not built in, or no device/driver) recording fails with a message that
  // says why instead of crashing; where a GPU exists, worker-runtime/tests/gpu runs the real thing.
  Result<std::shared_ptr<const ReadyEvent>> e = record_cuda_ready_event(nullptr);
  if (e.is_ok()) GTEST_SKIP() << "a CUDA device is present: covered by tests/gpu/run-gpu-tests";
  EXPECT_FALSE(e.status().message().empty());
}

}  // namespace
}  // namespace korovod
