// Waits that must end: a group reused under its names with other parameters completes, and a
// timed wait returns on time although the caller ran the cycle that now waits for a ready event
// (with inline cycles, the default, the waiting caller runs the cycles itself).
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <thread>

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

void check_waits_in_slices(Runtime& rt, Checker& c) {
  // Rank 0 waits in 0.25 ms slices (Python waits in slices too, so that Ctrl-C gets through)
  // and polls in between, for an allreduce the last rank submits half a second late. Its
  // request went out with the first cycle: the slices and polls that follow have nothing to
  // negotiate and start no round, so the late rank, asleep meanwhile, uses (almost) no CPU --
  // where each of the ~2000 used to ring it for a round (14-30 ms then, 0.2-0.4 ms now with 2-4
  // ranks on this project's 2-core VM). Other control planes cycle on Horovod's timer; their CPU
  // is not checked.
  const int rank = rt.rank(), size = rt.size();
  const std::string forced = test_config().cpu_operations;
  const bool evented = forced != "mpi" && forced != "tcp";
  constexpr double kLateSeconds = 0.5, kMostCpuMs = 5;
  std::vector<float> x(4, 1.f);
  TensorView v{x.data(), DataType::kFloat32, {4}, kCpuDevice};
  MPI_Barrier(MPI_COMM_WORLD);
  const double cpu_start = process_cpu_ms();
  if (rank == size - 1) std::this_thread::sleep_for(std::chrono::duration<double>(kLateSeconds));
  const double late_cpu = process_cpu_ms() - cpu_start;
  Result<Handle> h = rt.allreduce("slices.late", v, v, ReduceOp::kSum);
  if (!MPI_CHECK(c, h.is_ok(), "enqueue: {}", h.status().to_string())) return;
  Status s = Status::in_progress();
  const auto start = Steady::now();
  while (s.code() == StatusCode::kInProgress && seconds_since(start) < 10) {
    s = rank == 0 ? rt.wait_for(*h, 0.00025) : rt.wait(*h);
    if (rank == 0 && s.code() == StatusCode::kInProgress) (void)rt.poll(*h);
  }
  MPI_CHECK(c, s.is_ok() && x[0] == size, "allreduce waited for in slices: {}, {} (expected {})", s.to_string(), x[0],
            size);
  rt.release(*h);
  const double most = max_over_ranks(rank == size - 1 ? late_cpu : 0.0);
  MPI_CHECK(c, !evented || most < kMostCpuMs, "asleep {} s while rank 0 waited in slices, the late rank used {:.1f} ms of CPU",
            kLateSeconds, most);
}

}  // namespace korovod::mpitest
