// rt_gpu_test: GPU tensors on real GPUs, under mpirun (run by tests/gpu/run-gpu-tests). Every
// collective on device tensors, op x dtype x size, checked against expected values; a failing
// rank prints which check failed and the run exits 1. Two layouts:
//   one rank per GPU            the NCCL backend (--expect-plane nccl, the default)
//   several ranks on one GPU    host staging (--expect-plane staging; e.g. CUDA_VISIBLE_DEVICES=0
//                               for every rank), where NCCL would refuse the duplicate GPU
// Rank 0's startup line must name the expected GPU data plane. Then 5 resets (a new runtime in
// the same process, a device allreduce, shutdown) must leave the device's free memory, the
// threads and the descriptors as they were (gpu_reset_check.cc).
//   --count-gpus  print how many GPUs cudaGetDeviceCount sees (0 on error) and exit, no MPI
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "gpu_check.h"

namespace korovod::gputest {
namespace {

int usage(const char* argv0) {
  std::printf(
      "usage: mpirun -np <GPUs> %s [--expect-plane nccl]   one rank per GPU: the NCCL backend\n"
      "       CUDA_VISIBLE_DEVICES=0 mpirun -np 2 %s --expect-plane staging\n"
      "                                  several ranks on one GPU: host staging\n"
      "       %s --count-gpus          print cudaGetDeviceCount's answer (0 on error)\n"
      "Runs every collective on device tensors and checks the results, and that rank 0's startup\n"
      "line names the expected GPU data plane (tests/gpu/run-gpu-tests runs both layouts).\n",
      argv0, argv0, argv0);
  return 0;
}

// Keeps the runtime's log lines (rank 0's startup line among them) and prints them as usual.
struct LogLines {
  std::mutex mu;
  std::vector<std::string> lines;
  LogSink sink(int rank) {
    return [this, rank](LogLevel, const std::string& line) {
      std::fprintf(stderr, "[korovod rank %d] %s\n", rank, line.c_str());
      std::lock_guard lock(mu);
      lines.push_back(line);
    };
  }
};

void check_plane(Checker& c, LogLines& log, bool staging) {
  const std::string want = staging ? "GPU data plane: host staging through " : "GPU data plane: NCCL ";
  std::lock_guard lock(log.mu);
  bool found = false;
  for (const std::string& line : log.lines) found = found || line.find(want) != std::string::npos;
  MPI_CHECK(c, found, "rank 0's startup line does not name '{}': {}", want,
            log.lines.empty() ? std::string("(no log line)") : log.lines.front());
}

int run(int rank, int size, bool staging) {
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
    std::fprintf(stderr, "[rank %d] no GPU visible (cudaGetDeviceCount)\n", rank);
    return 1;
  }
  Checker c(rank);
  LogLines log;
  // A runtime as korovod's own start makes it (the environment's config, MPI planes), logging
  // into `log`; every reset below makes another the same way.
  auto make = [&]() -> Result<std::unique_ptr<Runtime>> {
    Result<Config> config = parse_config(process_environment());
    if (!config.is_ok()) return config.status();
    config->log_level = LogLevel::kWarning;  // the startup line, warnings and errors
    Result<RuntimeOptions> options = mpi_runtime_options(std::move(config).value());
    if (!options.is_ok()) return options.status();
    options->log_sink = log.sink(rank);
    return Runtime::create(std::move(options).value());
  };
  Result<std::unique_ptr<Runtime>> created = make();
  if (!MPI_CHECK(c, created.is_ok(), "runtime: {}", created.status().to_string())) return 1;
  std::unique_ptr<Runtime> rt = std::move(created).value();
  if (rank == 0) check_plane(c, log, staging);
  GpuContext g{*rt, c, rank, size, rt->local_rank() % gpus, staging, {}};
  MPI_CHECK(g.c, cudaSetDevice(g.device) == cudaSuccess, "cudaSetDevice({})", g.device);
  check_allreduce(g);
  check_allreduce_scaled_and_grouped(g);
  check_allgather_broadcast(g);
  check_alltoall_reducescatter_barrier(g);
  check_ready_event(g);
  g.outputs.clear();
  Status down = rt->shutdown();
  MPI_CHECK(c, down.is_ok(), "shutdown: {}", down.to_string());
  check_resets(c, rank, size, g.device, staging, 5, make);
  return c.failures();
}

}  // namespace
}  // namespace korovod::gputest

int main(int argc, char** argv) {
  bool staging = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") return korovod::gputest::usage(argv[0]);
    if (arg == "--count-gpus") {
      int gpus = 0;
      if (cudaGetDeviceCount(&gpus) != cudaSuccess) gpus = 0;
      std::printf("%d\n", gpus);
      return 0;
    }
    if (arg == "--expect-plane" && i + 1 < argc && (std::strcmp(argv[i + 1], "nccl") == 0 ||
                                                    std::strcmp(argv[i + 1], "staging") == 0)) {
      staging = std::strcmp(argv[++i], "staging") == 0;
      continue;
    }
    std::fprintf(stderr, "rt_gpu_test: unknown argument '%s' (see --help)\n", argv[i]);
    return 2;
  }
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int failures = korovod::gputest::run(rank, size, staging), total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    std::printf("rt_gpu_test np=%d (%s): %s\n", size, staging ? "host staging" : "NCCL",
                total == 0 ? "all checks passed" : "FAILED");
  }
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
