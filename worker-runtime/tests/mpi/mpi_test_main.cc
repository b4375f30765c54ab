// rt_mpi_test: run under `mpirun -np N` (N = 2, 3, 4). Modes:
//   (default)   every collective check, errors, stalls, process sets, timeline
//   --dead-rank the last rank dies after one allreduce; the others must get an error within
//               KOROVOD_COLLECTIVE_TIMEOUT_SECONDS (set by the test) and print DEAD-RANK-OK.
//   --stopped-rank the last rank stops itself (SIGSTOP) after one allreduce; the others' next
//               allreduce must fail within the collective timeout + 1 s naming it ("lost rank
//               N on host h"), even where the plane cannot be interrupted (MPI: the watchdog's
//               probe), and print STOPPED-RANK-OK; rank 0 then kills it.
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

#include "mpi_check.h"

namespace korovod::mpitest {

Config test_config() {
  Result<Config> c = parse_config(process_environment());
  Config config = c.is_ok() ? c.value() : Config{};
  config.log_level = LogLevel::kError;
  config.stall_warning_seconds = 1.0;
  config.stall_shutdown_seconds = 2.0;
  config.collective_timeout_seconds = 20.0;
  config.dynamic_process_sets = true;
  return config;
}

std::unique_ptr<Runtime> make_runtime(Config config, std::vector<std::vector<int>> sets) {
  Result<RuntimeOptions> options = mpi_runtime_options(std::move(config), nullptr, std::move(sets));
  if (!options.is_ok()) return nullptr;
  Result<std::unique_ptr<Runtime>> rt = Runtime::create(std::move(options).value());
  return rt.is_ok() ? std::move(rt).value() : nullptr;
}

// --dead-rank / --stopped-rank: a runtime with a 3 s collective timeout after one allreduce;
// then the last rank does `to_last` to itself and the others' next allreduce must fail. Returns
// that error, how long it took, and the timeout.
struct AfterLoss {
  Status status;
  double waited = 0;
  double timeout = 0;
};

std::optional<AfterLoss> allreduce_after_loss(int rank, int size, int to_last) {
  Config config = test_config();
  config.collective_timeout_seconds = 3.0;
  auto rt = make_runtime(config);
  std::vector<float> x(4, 1.f);
  TensorView v{x.data(), DataType::kFloat32, {4}, kCpuDevice};
  if (!rt) return std::nullopt;
  if (Status warm = rt->wait(*rt->allreduce("warmup", v, v)); !warm.is_ok()) {
    fmt::print("[rank {}] warmup allreduce failed: {}\n", rank, warm.to_string());
    return std::nullopt;
  }
  if (rank == size - 1) raise(to_last);
  auto start = std::chrono::steady_clock::now();
  auto h = rt->allreduce("after_loss", v, v);
  AfterLoss out;
  out.status = h.is_ok() ? rt->wait(*h) : h.status();
  out.waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.timeout = config.collective_timeout_seconds;
  (void)rt.release();  // never shut down: MPI cannot be finalized with a dead or stopped peer
  return out;
}

int run_dead_rank(int rank, int size) {
  std::optional<AfterLoss> r = allreduce_after_loss(rank, size, SIGKILL);
  if (!r) return 1;
  const bool ok = !r->status.is_ok() && r->waited < r->timeout + 2.0;
  fmt::print("[rank {}] {} after {:.2f} s: {}\n", rank, ok ? "DEAD-RANK-OK" : "DEAD-RANK-FAILED", r->waited,
             r->status.to_string());
  std::fflush(stdout);
  _exit(ok ? 0 : 1);  // MPI cannot be finalized with a dead peer
}

int run_stopped_rank(int rank, int size) {
  std::vector<int> pids(static_cast<size_t>(size));
  const int mine = static_cast<int>(getpid());
  MPI_Allgather(&mine, 1, MPI_INT, pids.data(), 1, MPI_INT, MPI_COMM_WORLD);
  std::optional<AfterLoss> r = allreduce_after_loss(rank, size, SIGSTOP);  // alive, silent: until rank 0 kills it
  if (!r) return 1;
  const std::string& message = r->status.message();
  const std::string want = fmt::format("lost rank {} on host stop-host", size - 1);  // KOROVOD_HOSTNAME
  const bool named = message.find(want) != std::string::npos &&
                     message.find(fmt::format("lost rank {} on host", rank)) == std::string::npos;
  const bool ok = !r->status.is_ok() && named && r->waited < r->timeout + 1.0;
  fmt::print("[rank {}] {} after {:.2f} s: {}\n", rank, ok ? "STOPPED-RANK-OK" : "STOPPED-RANK-FAILED", r->waited,
             r->status.to_string());
  std::fflush(stdout);
  if (rank == 0) {  // the others have their errors by now (the same bound): end the stopped rank
    std::this_thread::sleep_for(std::chrono::seconds(1));
    kill(pids[static_cast<size_t>(size - 1)], SIGKILL);
  }
  _exit(ok ? 0 : 1);  // MPI cannot be finalized with a stopped peer
}

}  // namespace korovod::mpitest

int main(int argc, char** argv) {
  using namespace korovod;
  using namespace korovod::mpitest;
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc > 1 && std::strcmp(argv[1], "--dead-rank") == 0) return run_dead_rank(rank, size);
  if (argc > 1 && std::strcmp(argv[1], "--stopped-rank") == 0) return run_stopped_rank(rank, size);

  Checker c(rank);
  check_startup_line(c, size);
  const std::string timeline = fmt::format("/tmp/korovod_rt_mpi_timeline_{}_{}.json", size, getppid());
  Config config = test_config();
  config.timeline_path = timeline;
  config.timeline_mark_cycles = true;
  auto rt = make_runtime(config, {{0, size - 1}});
  if (!MPI_CHECK(c, rt != nullptr, "runtime init")) MPI_Abort(MPI_COMM_WORLD, 2);
  MPI_CHECK(c, rt->rank() == rank && rt->size() == size, "rank/size {} {}", rt->rank(), rt->size());
  MPI_CHECK(c, rt->local_size() == size && rt->cross_size() == 1, "local/cross sizes");
  check_collectives(*rt, c);
  check_grouped_async_join(*rt, c);
  check_process_sets(*rt, c);
  check_mismatch_errors(*rt, c);
  check_stall(*rt, c);
  check_idle_and_late_ranks(*rt, c);
  check_group_reuse(*rt, c);
  check_timed_waits(*rt, c);
  check_waits_in_slices(*rt, c);
  Status down = rt->shutdown();
  MPI_CHECK(c, down.is_ok(), "shutdown: {}", down.to_string());
  if (rank == 0) check_timeline(*rt, c, timeline);

  int failures = c.failures(), total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) fmt::print("rt_mpi_test np={}: {}\n", size, total == 0 ? "all checks passed" : "FAILED");
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
