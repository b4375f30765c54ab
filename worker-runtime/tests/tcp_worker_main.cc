// rt_tcp_worker: one rank of a job started WITHOUT mpirun (tcp_launch_test.sh starts the
// processes with KOROVOD_RENDEZVOUS_ADDR/PORT, KOROVOD_RANK, KOROVOD_SIZE): init_tcp_runtime(),
// then allreduces through the whole engine, each result checked; prints TCP-WORKER-OK.
//   --crash  a timer thread SIGKILLs the last rank 300 ms into a loop of 4 MiB allreduces (so
//            mostly mid-collective, data or control plane); every other rank's pending
//            allreduce must fail within kCrashBoundSeconds (prints TCP-WORKER-CRASH-OK).
//   --steps N --pause-ms M  N allreduces (default 5) with M ms between them: a job that lasts
//            (the intruder tests attack its listeners meanwhile).
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "korovod/tcp.h"

namespace {

constexpr double kCrashBoundSeconds = 2.0;

struct Args {
  bool crash = false;
  int steps = 5;
  int pause_ms = 0;
};

int run(const Args& args) {
  const bool crash = args.crash;
  using namespace korovod;
  Result<std::unique_ptr<Runtime>> rt = init_tcp_runtime();
  if (!rt.is_ok()) {
    fmt::print("TCP-WORKER-FAILED init: {}\n", rt.status().to_string());
    return 1;
  }
  Runtime& r = **rt;
  const int rank = r.rank(), size = r.size();
  std::vector<float> x(1 << 20);
  if (crash && rank == size - 1) {
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      raise(SIGKILL);
    }).detach();
  }
  for (int i = 0;; ++i) {
    if (!crash && i == args.steps) break;
    if (i > 0 && args.pause_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(args.pause_ms));
    for (float& v : x) v = static_cast<float>(rank + 1);
    TensorView t{x.data(), DataType::kFloat32, {static_cast<int64_t>(x.size())}, kCpuDevice};
    const auto start = std::chrono::steady_clock::now();
    Result<Handle> h = r.allreduce(fmt::format("x{}", i), t, t, ReduceOp::kSum);
    Status s = h.is_ok() ? r.wait(*h) : h.status();
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!s.is_ok()) {
      const bool ok = crash && took < kCrashBoundSeconds;
      fmt::print("[rank {}] {} at allreduce {} after {:.3f} s: {}\n", rank,
                 ok ? "TCP-WORKER-CRASH-OK" : "TCP-WORKER-FAILED", i, took, s.to_string());
      std::fflush(stdout);
      _exit(ok ? 0 : 1);
    }
    const float want = static_cast<float>(size * (size + 1) / 2);
    for (float v : x) {
      if (v != want) {
        fmt::print("[rank {}] TCP-WORKER-FAILED allreduce {}: {} instead of {}\n", rank, i, v, want);
        return 1;
      }
    }
  }
  fmt::print("[rank {}] TCP-WORKER-OK size {} local {}/{} cross {}/{} data planes {}\n", rank, size, r.local_rank(),
             r.local_size(), r.cross_rank(), r.cross_size(), fmt::join(r.backend_names(), ","));
  return r.shutdown().is_ok() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      fmt::print("usage: rt_tcp_worker [--crash] [--steps N] [--pause-ms M]\n"
                 "One rank of a job started without MPI (see tcp_launch_test.sh): needs KOROVOD_RENDEZVOUS_ADDR,\n"
                 "KOROVOD_RENDEZVOUS_PORT, KOROVOD_RANK and KOROVOD_SIZE. Runs checked allreduces through the\n"
                 "engine (N of them, default 5, M ms apart); --crash kills the last rank and checks that the\n"
                 "others fail in time.\n");
      return 0;
    }
    if (std::strcmp(argv[i], "--crash") == 0) {
      args.crash = true;
    } else if (std::strcmp(argv[i], "--steps") == 0 && i + 1 < argc) {
      args.steps = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--pause-ms") == 0 && i + 1 < argc) {
      args.pause_ms = std::atoi(argv[++i]);
    } else {
      fmt::print(stderr, "rt_tcp_worker: unknown argument {} (see --help)\n", argv[i]);
      return 2;
    }
  }
  return run(args);
}
