// The worker side of rt_elastic_chaos (elastic_chaos_main.cc starts it as `--worker`): an elastic
// worker as a training script would be, on the C++ API. Per round: init (joining the driver's
// newest round), checked allreduces, shutdown; a failed collective is reported with the times it
// was submitted and its error was seen (steady clock: CLOCK_MONOTONIC, the driver's clock too),
// then one more allreduce is tried (it must fail as well, with the same error), then a reset.
// After the last round it compares its threads, descriptors and /dev/shm entries with those it
// had before the first init.
#include "elastic_worker.h"

#include <dirent.h>
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "korovod/tcp.h"

namespace korovod::chaos {
namespace {

int count_entries(const std::string& dir, const std::string& prefix = "") {
  DIR* d = opendir(dir.c_str());
  if (!d) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    if (name.rfind(prefix, 0) == 0) ++n;
  }
  closedir(d);
  return n;
}

struct Resources {
  int threads = 0, fds = 0, shm = 0;
  static Resources now() {
    return {count_entries("/proc/self/task"), count_entries("/proc/self/fd"),
            count_entries("/dev/shm", fmt::format("korovod-{}-", getpid()))};
  }
};

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One allreduce of `floats` values, checked; the tensor name is the same on every rank.
// `submitted`: when it was handed to the runtime (now_ns()).
Status checked_allreduce(Runtime& rt, int step, std::vector<float>& x, int64_t* submitted = nullptr) {
  for (float& v : x) v = static_cast<float>(rt.rank() + 1);
  TensorView t{x.data(), DataType::kFloat32, {static_cast<int64_t>(x.size())}, kCpuDevice};
  if (submitted) *submitted = now_ns();
  Result<Handle> h = rt.allreduce(fmt::format("step{}", step), t, t, ReduceOp::kSum);
  Status s = h.is_ok() ? rt.wait(*h) : h.status();
  if (h.is_ok()) rt.release(*h);
  if (!s.is_ok()) return s;
  const float want = static_cast<float>(rt.size() * (rt.size() + 1) / 2);
  if (x.front() != want || x.back() != want) {
    return Status::precondition(fmt::format("allreduce {}: {} instead of {}", step, x.back(), want));
  }
  return Status::ok();
}

// The rounds from the driver until it says the job is done; false on a wrong result or an
// unexpected init error.
bool run_rounds(const WorkerArgs& args) {
  std::vector<float> x(static_cast<size_t>(args.floats));
  for (;;) {
    Result<std::unique_ptr<Runtime>> rt = init_tcp_runtime();
    if (!rt.is_ok()) {
      Result<int64_t> published = read_elastic_published_round(process_environment());
      if (rt.status().code() == StatusCode::kPreconditionError && published.is_ok() && *published >= args.last_round) {
        return true;  // removed from the last round: done
      }
      if (rt.status().code() == StatusCode::kPreconditionError) continue;  // removed: wait for the next round
      fmt::print("WORKER-FAILED init: {}\n", rt.status().to_string());
      return false;
    }
    Runtime& r = **rt;
    const int64_t round = r.elastic_round();
    const bool until_lost = args.until_lost_round == round;
    if (until_lost && args.hold_rank == r.rank()) std::this_thread::sleep_for(std::chrono::hours(1));
    Status failed = Status::ok();
    int64_t submitted = 0;  // of the last allreduce: the one that failed, if one did
    for (int step = 0; failed.is_ok() && (until_lost || step < args.steps); ++step) {
      failed = checked_allreduce(r, step, x, &submitted);
    }
    if (!failed.is_ok()) {
      const int64_t seen = now_ns();
      if (failed.code() == StatusCode::kPreconditionError) {
        fmt::print("WORKER-FAILED round {} rank {}: {}\n", round, r.rank(), failed.to_string());
        return false;
      }
      fmt::print("LOST round {} rank {} at {} submitted {} code {}: {}\n", round, r.rank(), seen, submitted,
                 static_cast<int>(failed.code()), failed.message());
      // The operations after a failure fail too, naming the same lost peer.
      const Status next = checked_allreduce(r, args.steps + 1, x);
      fmt::print("NEXT round {} rank {} code {}: {}\n", round, r.rank(), static_cast<int>(next.code()),
                 next.is_ok() ? "succeeded (it should have failed)" : next.message());
      std::fflush(stdout);
    }
    (void)r.shutdown();
    rt->reset();
    if (failed.is_ok() && round >= args.last_round) return true;
  }
}

}  // namespace

int run_worker(const WorkerArgs& args) {
  const Resources before = Resources::now();
  if (!run_rounds(args)) return 1;
  Resources after = Resources::now();
  // Threads that were joined may still be listed for a moment after they returned.
  for (int i = 0; i < 100 && after.threads > before.threads; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    after = Resources::now();
  }
  if (after.threads != before.threads || after.fds != before.fds || after.shm != 0) {
    fmt::print("WORKER-LEAK threads {} -> {}, descriptors {} -> {}, /dev/shm segments of this process {}\n",
               before.threads, after.threads, before.fds, after.fds, after.shm);
    return 1;
  }
  fmt::print("WORKER-DONE threads {} descriptors {} (as before the first init)\n", after.threads, after.fds);
  return 0;
}

}  // namespace korovod::chaos
