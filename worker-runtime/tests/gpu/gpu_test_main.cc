// rt_gpu_test: the NCCL backend on real GPUs, under mpirun with one rank per GPU (run by
// tests/gpu/run-gpu-tests). Every collective on device tensors, op x dtype x size, checked
// against expected values; a failing rank prints which check failed and the run exits 1.
//   --count-gpus  print how many GPUs cudaGetDeviceCount sees (0 on error) and exit, no MPI
#include <mpi.h>

#include <cstdio>
#include <cstring>

#include "gpu_check.h"

namespace korovod::gputest {
namespace {

int usage(const char* argv0) {
  std::printf(
      "usage: mpirun -np <GPUs> %s     (one rank per GPU; tests/gpu/run-gpu-tests does this)\n"
      "       %s --count-gpus          print cudaGetDeviceCount's answer (0 on error)\n"
      "Runs every collective on device tensors through the NCCL backend and checks the results.\n",
      argv0, argv0);
  return 0;
}

int run(int rank, int size) {
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
    std::fprintf(stderr, "[rank %d] no GPU visible (cudaGetDeviceCount)\n", rank);
    return 1;
  }
  Checker c(rank);
  Result<Config> config = parse_config(process_environment());
  if (!MPI_CHECK(c, config.is_ok(), "config: {}", config.status().to_string())) return 1;
  config->log_level = LogLevel::kError;
  Result<RuntimeOptions> options = mpi_runtime_options(std::move(config).value());
  if (!MPI_CHECK(c, options.is_ok(), "mpi_runtime_options: {}", options.status().to_string())) return 1;
  Result<std::unique_ptr<Runtime>> created = Runtime::create(std::move(options).value());
  if (!MPI_CHECK(c, created.is_ok(), "runtime: {}", created.status().to_string())) return 1;
  std::unique_ptr<Runtime> rt = std::move(created).value();
  GpuContext g{*rt, c, rank, size, rt->local_rank() % gpus, {}};
  MPI_CHECK(g.c, cudaSetDevice(g.device) == cudaSuccess, "cudaSetDevice({})", g.device);
  check_allreduce(g);
  check_allreduce_scaled_and_grouped(g);
  check_allgather_broadcast(g);
  check_alltoall_reducescatter_barrier(g);
  check_ready_event(g);
  g.outputs.clear();
  Status down = rt->shutdown();
  MPI_CHECK(c, down.is_ok(), "shutdown: {}", down.to_string());
  return c.failures();
}

}  // namespace
}  // namespace korovod::gputest

int main(int argc, char** argv) {
  if (argc > 1 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    return korovod::gputest::usage(argv[0]);
  }
  if (argc > 1 && std::strcmp(argv[1], "--count-gpus") == 0) {
    int gpus = 0;
    if (cudaGetDeviceCount(&gpus) != cudaSuccess) gpus = 0;
    std::printf("%d\n", gpus);
    return 0;
  }
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int failures = korovod::gputest::run(rank, size), total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("rt_gpu_test np=%d: %s\n", size, total == 0 ? "all checks passed" : "FAILED");
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
