// The algorithms' path for device (GPU) tensors, without a GPU: a backend that claims device
// tensors but runs on host memory (wrapping the fake one) records what the algorithms ask of
// it. Device tensors must never touch the host fusion buffer or the host scale kernels: each
// tensor goes to allreduce_scaled / reducescatter_scaled with Horovod's scales, and the
// broadcast root's copy goes through Backend::copy.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <mutex>

#include "algorithms/executor.h"
#include "core/testing/forwarding_backend.h"
#include "core/testing/test_ranks.h"
#include "korovod/runtime.h"
#include "transport/fake/fake_world.h"

namespace korovod {
namespace {

struct Calls {
  std::mutex mu;
  std::vector<std::string> log;  // "allreduce_scaled 4 0.5 4", "copy 12", ...
  void add(std::string s) {
    std::lock_guard lock(mu);
    log.push_back(std::move(s));
  }
};

void scale_floats(void* data, int64_t count, double factor) {
  auto* f = static_cast<float*>(data);
  for (int64_t i = 0; i < count; ++i) f[i] = static_cast<float>(f[i] * factor);
}

class HostAsDeviceBackend final : public testing::ForwardingBackend {
 public:
  HostAsDeviceBackend(std::unique_ptr<Backend> inner, Calls& calls)
      : ForwardingBackend(std::move(inner)), calls_(calls) {}
  std::string name() const override { return "DEV"; }
  bool enabled(int device) const override { return device >= 0; }
  Status allreduce_scaled(const void* s, void* r, int64_t n, DataType t, ReduceOp op, double pre, double post) override {
    calls_.add(fmt::format("allreduce_scaled {} {} {} {}", n, reduce_op_name(op), pre, post));
    KOROVOD_RETURN_IF_ERROR(inner().allreduce(s, r, n, t, op == ReduceOp::kAverage ? ReduceOp::kSum : op));
    scale_floats(r, n, pre * post / (op == ReduceOp::kAverage ? size() : 1));
    return Status::ok();
  }
  Status reducescatter_scaled(const void* s, void* r, const std::vector<int64_t>& c, DataType t, ReduceOp op,
                              double pre, double post) override {
    calls_.add(fmt::format("reducescatter_scaled {} {} {}", reduce_op_name(op), pre, post));
    KOROVOD_RETURN_IF_ERROR(inner().reducescatter(s, r, c, t, op == ReduceOp::kAverage ? ReduceOp::kSum : op));
    scale_floats(r, c[rank()], pre * post / (op == ReduceOp::kAverage ? size() : 1));
    return Status::ok();
  }
  Status copy(void* dst, const void* src, int64_t bytes) override {
    calls_.add(fmt::format("copy {}", bytes));
    std::memcpy(dst, src, static_cast<size_t>(bytes));
    return Status::ok();
  }

 private:
  Calls& calls_;
};

class HostAsDeviceProvider final : public BackendProvider {
 public:
  HostAsDeviceProvider(std::shared_ptr<fake::FakeWorld> world, int rank, Calls& calls)
      : inner_(std::move(world), rank), calls_(calls) {}
  std::string name() const override { return "DEV"; }
  Result<std::unique_ptr<Backend>> create_backend(const std::vector<int>& ranks, int set_id) override {
    // A set id the engine's own fake backend does not use, so the two never share a group.
    Result<std::unique_ptr<Backend>> inner = inner_.create_backend(ranks, set_id + 1000);
    if (!inner.is_ok()) return inner.status();
    return std::unique_ptr<Backend>(std::make_unique<HostAsDeviceBackend>(std::move(inner).value(), calls_));
  }

 private:
  fake::FakeBackendProvider inner_;
  Calls& calls_;
};

TensorView on_gpu(std::vector<float>& v) {
  return TensorView{v.data(), DataType::kFloat32, {static_cast<int64_t>(v.size())}, /*device=*/0};
}

TEST(DevicePath, TensorsAreNotFusedAndTheBackendScalesAndCopies) {
  const int n = 2;
  auto world = std::make_shared<fake::FakeWorld>(n);
  std::vector<std::unique_ptr<Calls>> calls;
  for (int r = 0; r < n; ++r) calls.push_back(std::make_unique<Calls>());
  testing::run_ranks(n, [&](int rank) {
    RuntimeOptions o;
    o.make_executor = make_executor;
    o.config.cycle_time_ms = 0.5;
    o.config.log_level = LogLevel::kFatal;
    o.transport = std::make_shared<fake::FakeTransportProvider>(world, rank);
    o.backends.push_back(std::make_shared<HostAsDeviceProvider>(world, rank, *calls[rank]));
    o.backends.push_back(std::make_shared<fake::FakeBackendProvider>(world, rank));
    Result<std::unique_ptr<Runtime>> created = Runtime::create(std::move(o));
    ASSERT_TRUE(created.is_ok()) << created.status().to_string();
    Runtime& rt = **created;

    std::vector<std::vector<float>> t = {std::vector<float>(4, rank + 1.f), std::vector<float>(4, rank + 1.f),
                                         std::vector<float>(4, rank + 1.f)};
    std::vector<TensorView> views = {on_gpu(t[0]), on_gpu(t[1]), on_gpu(t[2])};
    Result<std::vector<Handle>> hs = rt.grouped_allreduce({"g0", "g1", "g2"}, views, views, ReduceOp::kSum, 0.5, 4.0);
    ASSERT_TRUE(hs.is_ok()) << hs.status().to_string();
    for (Handle h : *hs) ASSERT_TRUE(rt.wait(h).is_ok());
    for (const auto& v : t) EXPECT_EQ(v, std::vector<float>(4, 6.f));  // (1 + 2) * 0.5 * 4

    std::vector<float> in(3, rank == 1 ? 9.f : 0.f), out(3, -1.f);
    CollectiveArgs b;
    b.type = RequestType::kBroadcast;
    b.name = "bc";
    b.input = on_gpu(in);
    b.output = on_gpu(out);
    b.root_rank = 1;
    Result<Handle> bh = rt.enqueue(std::move(b));
    ASSERT_TRUE(bh.is_ok() && rt.wait(*bh).is_ok());
    EXPECT_EQ(out, std::vector<float>(3, 9.f));

    std::vector<float> rs(4, rank + 1.f);
    Result<Handle> rh = rt.reducescatter("rs", on_gpu(rs), ReduceOp::kAverage);
    ASSERT_TRUE(rh.is_ok() && rt.wait(*rh).is_ok());
    OpOutput ro = *rt.output(*rh);
    EXPECT_EQ(static_cast<float*>(ro.data)[0], 1.5f);
    EXPECT_TRUE(rt.shutdown().is_ok());
  });
  for (int rank = 0; rank < n; ++rank) {
    std::vector<std::string> want = {"allreduce_scaled 4 SUM 0.5 4", "allreduce_scaled 4 SUM 0.5 4",
                                     "allreduce_scaled 4 SUM 0.5 4"};
    if (rank == 1) want.push_back("copy 12");  // only the root copies input to output
    want.push_back("reducescatter_scaled AVERAGE 1 1");
    EXPECT_EQ(calls[rank]->log, want) << "rank " << rank;
  }
}

}  // namespace
}  // namespace korovod
