// Waits that must end: a group reused under its names with other parameters completes, and a
// timed wait returns on time although the caller ran the cycle that now waits for a ready event
// (with inline cycles, the default, the waiting caller runs the cycles itself).
#include <mpi.h>

#include <atomic>
#include <chrono>

#include "mpi_check.h"

namespace korovod::mpitest {
namespace {

using Steady = std::chrono::steady_clock;

double seconds_since(Steady::time_point start) {
  return std::chrono::duration<double>(Steady::now() - start).count();
}

// Stands in for a CUDA event on the framework's stream: not ready until fire().
class ManualEvent final : public ReadyEvent {
 public:
  Result<bool> ready() const override { return fired.load(); }
  void fire() { fired = true; }
  std::atomic<bool> fired{false};
};

// A grouped sum of "reuse.<i>", member i with counts[i] elements of rank + 1 (float, or double
// where f64[i]); every output must be 1 + ... + size, within 10 s (a hang fails the check).
void grouped_sum(Runtime& rt, Checker& c, const std::vector<int64_t>& counts, const std::vector<bool>& f64,
                 const std::string& what) {
  const int rank = rt.rank(), size = rt.size();
  std::vector<std::vector<float>> fs(counts.size());
  std::vector<std::vector<double>> ds(counts.size());
  std::vector<std::string> names;
  std::vector<TensorView> views;
  for (size_t i = 0; i < counts.size(); ++i) {
    names.push_back("reuse." + std::to_string(i));
    const auto n = static_cast<size_t>(counts[i]);
    if (f64[i]) {
      ds[i].assign(n, rank + 1.0);
      views.push_back(TensorView{ds[i].data(), DataType::kFloat64, {counts[i]}, kCpuDevice});
    } else {
      fs[i].assign(n, rank + 1.f);
      views.push_back(TensorView{fs[i].data(), DataType::kFloat32, {counts[i]}, kCpuDevice});
    }
  }
  Result<std::vector<Handle>> hs = rt.grouped_allreduce(names, views, views, ReduceOp::kSum, 1.0, 1.0);
  if (!MPI_CHECK(c, hs.is_ok(), "{}: {}", what, hs.status().to_string())) return;
  for (Handle h : *hs) {
    Status s = rt.wait_for(h, 10.0);
    MPI_CHECK(c, s.is_ok(), "{}: {}", what, s.to_string());
  }
  const double expect = size * (size + 1) / 2.0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double got = f64[i] ? ds[i][0] : fs[i][0];
    MPI_CHECK(c, got == expect, "{}: {} = {} (expected {})", what, names[i], got, expect);
  }
}

}  // namespace

void check_group_reuse(Runtime& rt, Checker& c) {
  grouped_sum(rt, c, {3, 2}, {false, false}, "group, first");
  grouped_sum(rt, c, {3, 2}, {false, false}, "group, from the cache");
  grouped_sum(rt, c, {3, 5}, {false, false}, "group, one member's shape changed");
  grouped_sum(rt, c, {3, 5}, {false, true}, "group, one member's dtype changed");
  grouped_sum(rt, c, {3, 5, 4}, {false, true, false}, "group, one member more");
  grouped_sum(rt, c, {3, 5}, {false, true}, "group, one member fewer");
}

void check_timed_waits(Runtime& rt, Checker& c) {
  // Every rank's "timed.held" waits for its own ready event, and "timed.behind" (another dtype:
  // not fused with it) comes after it in the same or a later cycle.
  const int rank = rt.rank(), size = rt.size();
  auto event = std::make_shared<ManualEvent>();
  std::vector<float> x(5, rank + 1.f);
  std::vector<double> y(3, rank + 1.0);
  CollectiveArgs held;
  held.name = "timed.held";
  held.input = held.output = TensorView{x.data(), DataType::kFloat32, {5}, kCpuDevice};
  held.op = ReduceOp::kSum;
  held.ready_event = event;
  CollectiveArgs behind;
  behind.name = "timed.behind";
  behind.input = behind.output = TensorView{y.data(), DataType::kFloat64, {3}, kCpuDevice};
  behind.op = ReduceOp::kSum;
  Result<Handle> h1 = rt.enqueue(std::move(held));
  Result<Handle> h2 = rt.enqueue(std::move(behind));
  if (!MPI_CHECK(c, h1.is_ok() && h2.is_ok(), "enqueue with a ready event")) return;
  auto start = Steady::now();
  Status s = rt.wait_for(*h2, 0.2);
  double waited = seconds_since(start);
  MPI_CHECK(c, s.code() == StatusCode::kInProgress, "wait_for(0.2) behind a ready event: {}", s.to_string());
  MPI_CHECK(c, waited < 1.5, "wait_for(0.2) behind a ready event took {:.2f} s", waited);
  start = Steady::now();
  s = rt.wait_for(*h1, 0.05);  // the cycle now waits on another thread
  waited = seconds_since(start);
  MPI_CHECK(c, s.code() == StatusCode::kInProgress, "wait_for(0.05) on the held op: {}", s.to_string());
  MPI_CHECK(c, waited < 1.0, "wait_for(0.05) on the held op took {:.2f} s", waited);
  MPI_Barrier(MPI_COMM_WORLD);  // every rank has seen its waits time out
  event->fire();
  s = rt.wait_for(*h2, 10.0);
  MPI_CHECK(c, s.is_ok(), "the op behind the ready event after it fired: {}", s.to_string());
  s = rt.wait_for(*h1, 10.0);
  MPI_CHECK(c, s.is_ok(), "the held op after its event fired: {}", s.to_string());
  const float sum = size * (size + 1) / 2.f;
  MPI_CHECK(c, x[0] == sum && y[0] == sum, "held/behind sums {} {} (expected {})", x[0], y[0], sum);
  rt.release(*h1);
  rt.release(*h2);
}

}  // namespace korovod::mpitest
