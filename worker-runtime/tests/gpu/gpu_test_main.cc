// rt_gpu_test: GPU tensors on real GPUs (run by tests/gpu/run-gpu-tests and tests/gpu/run-kit).
// Every collective on device tensors, op x dtype x size, checked against expected values; a
// failing rank prints which check failed and the run exits 1. Two layouts:
//   one rank per GPU            the NCCL backend (--expect-plane nccl, the default)
//   several ranks on one GPU    host staging (--expect-plane staging; e.g. CUDA_VISIBLE_DEVICES=0
//                               for every rank), where NCCL would refuse the duplicate GPU
// Rank 0's startup line must name the expected GPU data plane. Then 5 resets (a new runtime in
// the same process, a device allreduce, shutdown) must leave the device's free memory, the
// threads and the descriptors as they were (gpu_reset_check.cc). Last, the ranks agree on the
// verdict with a CPU allreduce of their failure counts in one more runtime.
//
// Two ways to start it:
//   over korovod's TCP rendezvous, no MPI: under korovodrun (korovodrun -np 2 rt_gpu_test), or
//     any launcher that sets KOROVOD_RENDEZVOUS_ADDR/PORT, KOROVOD_RANK and KOROVOD_SIZE (as
//     tcp_launch_test.sh starts rt_tcp_worker); chosen whenever KOROVOD_RENDEZVOUS_ADDR is set;
//   under mpirun, in a build with MPI (KOROVOD_GPU_TEST_MPI: links libkorovod_mpi.so).
// Before anything else it checks that the NCCL the process loaded (on a GPU machine, the one of
// torch's wheel) is at least the version of the headers it was built against.
//   --count-gpus     print how many GPUs cudaGetDeviceCount sees (0 on error, the error on
//                    stderr) and exit; needs no launcher
//   --startup-only   start the runtime, check rank 0's startup line names the GPU data plane,
//                    agree on the verdict, exit: the start path and the libraries, no GPU needed
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "gpu_check.h"
#include "korovod/tcp.h"
#ifdef KOROVOD_GPU_TEST_MPI
#include "korovod/mpi.h"
#endif

namespace korovod::gputest {
namespace {

int usage(const char* argv0) {
  std::printf(
      "usage: korovodrun -np <GPUs> %s [--expect-plane nccl]   one rank per GPU: the NCCL backend\n"
      "       CUDA_VISIBLE_DEVICES=0 korovodrun -np 2 %s --expect-plane staging\n"
      "                                  several ranks on one GPU: host staging\n"
      "       korovodrun -np N %s --startup-only [--expect-plane P]\n"
      "                                  only start the runtime and check the startup line (no GPU needed)\n"
      "       %s --count-gpus          print cudaGetDeviceCount's answer (0 on error, the error on stderr)\n"
      "Runs every collective on device tensors and checks the results, that rank 0's startup line\n"
      "names the expected GPU data plane, and that 5 resets leave no device memory, thread or\n"
      "descriptor behind. Starts over korovod's TCP rendezvous when KOROVOD_RENDEZVOUS_ADDR is set\n"
      "(korovodrun sets it; no MPI needed), else under mpirun (builds with MPI only: %s).\n"
      "First checks that the NCCL loaded is at least the version of the headers it was built\n"
      "against (NCCL %d.%d.%d).\n",
      argv0, argv0, argv0, argv0,
#ifdef KOROVOD_GPU_TEST_MPI
      "this one has it",
#else
      "this one has not",
#endif
      NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
  return 0;
}

std::string nccl_version_text(int code) {
  if (code >= 10000) return fmt::format("{}.{}.{}", code / 10000, code % 10000 / 100, code % 100);
  return fmt::format("{}.{}.{}", code / 1000, code % 1000 / 100, code % 100);  // before NCCL 2.9
}

// Where the dynamic loader found libnccl.so.2 (the library that holds ncclGetVersion).
std::string loaded_nccl_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&ncclGetVersion), &info) != 0 && info.dli_fname) return info.dli_fname;
  return "(unknown path)";
}

// The NCCL of this process must offer at least what the headers promised at build time.
Status check_nccl_version(std::string* said) {
  int loaded = 0;
  const ncclResult_t r = ncclGetVersion(&loaded);
  if (r != ncclSuccess) return Status::unknown(fmt::format("ncclGetVersion failed: {}", ncclGetErrorString(r)));
  *said = fmt::format("NCCL {} loaded from {} (built against the NCCL {} headers)", nccl_version_text(loaded),
                      loaded_nccl_path(), nccl_version_text(NCCL_VERSION_CODE));
  if (loaded < NCCL_VERSION_CODE) {
    return Status::precondition(fmt::format("{}: the library is older than the headers; put a libnccl.so.2 of at "
                                            "least {} first on LD_LIBRARY_PATH",
                                            *said, nccl_version_text(NCCL_VERSION_CODE)));
  }
  return Status::ok();
}

// This process's rank as the launcher gave it (before a runtime exists to ask), -1 if none did.
int launcher_rank() {
  for (const char* name : {"KOROVOD_RANK", "HOROVOD_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}) {
    if (const char* v = std::getenv(name); v && *v) return std::atoi(v);
  }
  return -1;
}

enum class Start { kTcp, kMpi };

Result<Start> choose_start() {
  if (tcp_rendezvous_configured(process_environment())) return Start::kTcp;
#ifdef KOROVOD_GPU_TEST_MPI
  return Start::kMpi;
#else
  return Status::invalid_argument(
      "KOROVOD_RENDEZVOUS_ADDR is not set and this build has no MPI: start it under korovodrun "
      "(korovodrun -np N rt_gpu_test ...), or set KOROVOD_RENDEZVOUS_ADDR/PORT, KOROVOD_RANK and KOROVOD_SIZE");
#endif
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

// Every rank's failure count summed over the runtime's CPU data plane.
Result<int> agree(Runtime& rt, int failures) {
  int32_t total = failures;
  TensorView t{&total, DataType::kInt32, {1}, kCpuDevice};
  Result<Handle> h = rt.allreduce("verdict", t, t, ReduceOp::kSum);
  if (!h.is_ok()) return h.status();
  KOROVOD_RETURN_IF_ERROR(rt.wait(*h));
  return static_cast<int>(total);
}

struct Args {
  bool staging = false;
  bool startup_only = false;
};

int run(const Args& args) {
  const int guess = launcher_rank();
  Result<Start> start = choose_start();
  if (!start.is_ok()) {
    std::fprintf(stderr, "rt_gpu_test: %s\n", start.status().message().c_str());
    return 2;
  }
  std::string nccl;
  const Status nccl_ok = check_nccl_version(&nccl);
  if (!nccl_ok.is_ok()) {
    std::fprintf(stderr, "[rank %d] rt_gpu_test: %s\n", guess, nccl_ok.message().c_str());
    return 1;
  }
  if (guess <= 0) std::printf("rt_gpu_test: %s\n", nccl.c_str());
  int gpus = 0;
  const cudaError_t counted = cudaGetDeviceCount(&gpus);
  if (!args.startup_only && (counted != cudaSuccess || gpus == 0)) {
    std::fprintf(stderr, "[rank %d] no GPU visible: cudaGetDeviceCount: %s (%s)\n", guess,
                 counted == cudaSuccess ? "0 devices" : cudaGetErrorString(counted),
                 counted == cudaSuccess ? "cudaSuccess" : cudaGetErrorName(counted));
    return 1;
  }
  LogLines log;
  // A runtime as korovod's own start makes it (the environment's config, the launcher's control
  // plane), logging into `log`; every reset below makes another the same way.
  auto make = [&]() -> Result<std::unique_ptr<Runtime>> {
    const EnvMap env = process_environment();
    Result<Config> config = parse_config(env);
    if (!config.is_ok()) return config.status();
    config->log_level = LogLevel::kWarning;  // the startup line, warnings and errors
    Result<RuntimeOptions> options = Status::invalid_argument("no control plane");
    if (*start == Start::kTcp) {
      Result<TcpWorldConfig> world = parse_tcp_world(env);
      if (!world.is_ok()) return world.status();
      options = tcp_runtime_options(std::move(config).value(), *world);
    } else {
#ifdef KOROVOD_GPU_TEST_MPI
      options = mpi_runtime_options(std::move(config).value());
#endif
    }
    if (!options.is_ok()) return options.status();
    options->log_sink = log.sink(guess);
    return Runtime::create(std::move(options).value());
  };
  Result<std::unique_ptr<Runtime>> created = make();
  if (!created.is_ok()) {
    std::fprintf(stderr, "[rank %d] CHECK FAILED: runtime: %s\n", guess, created.status().to_string().c_str());
    return 1;
  }
  std::unique_ptr<Runtime> rt = std::move(created).value();
  const int rank = rt->rank(), size = rt->size();
  Checker c(rank);
  if (rank == 0) check_plane(c, log, args.staging);
  Result<int> total = 0;
  if (args.startup_only) {
    total = agree(*rt, c.failures());
    Status down = rt->shutdown();
    MPI_CHECK(c, down.is_ok(), "shutdown: {}", down.to_string());
  } else {
    GpuContext g{*rt, c, rank, size, rt->local_rank() % gpus, args.staging, {}};
    MPI_CHECK(g.c, cudaSetDevice(g.device) == cudaSuccess, "cudaSetDevice({})", g.device);
    check_allreduce(g);
    check_allreduce_scaled_and_grouped(g);
    check_allgather_broadcast(g);
    check_alltoall_reducescatter_barrier(g);
    check_ready_event(g);
    g.outputs.clear();
    Status down = rt->shutdown();
    MPI_CHECK(c, down.is_ok(), "shutdown: {}", down.to_string());
    rt.reset();
    check_resets(c, rank, size, g.device, args.staging, 5, make);
    created = make();
    if (!created.is_ok()) {
      std::fprintf(stderr, "[rank %d] CHECK FAILED: the verdict's runtime: %s\n", rank,
                   created.status().to_string().c_str());
      return 1;
    }
    total = agree(**created, c.failures());
    (void)(*created)->shutdown();
  }
  if (!total.is_ok()) {
    std::fprintf(stderr, "[rank %d] CHECK FAILED: the verdict's allreduce: %s\n", rank,
                 total.status().to_string().c_str());
    return 1;
  }
  if (rank == 0) {
    std::printf("rt_gpu_test np=%d (%s%s, started over %s): %s\n", size, args.staging ? "host staging" : "NCCL",
                args.startup_only ? ", startup only" : "", *start == Start::kTcp ? "TCP" : "MPI",
                *total == 0 ? "all checks passed" : "FAILED");
  }
  return *total == 0 && c.failures() == 0 ? 0 : 1;
}

}  // namespace
}  // namespace korovod::gputest

int main(int argc, char** argv) {
  korovod::gputest::Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") return korovod::gputest::usage(argv[0]);
    if (arg == "--count-gpus") {
      int gpus = 0;
      const cudaError_t e = cudaGetDeviceCount(&gpus);
      if (e != cudaSuccess) {
        std::fprintf(stderr, "cudaGetDeviceCount: %s (%s)\n", cudaGetErrorString(e), cudaGetErrorName(e));
        gpus = 0;
      }
      std::printf("%d\n", gpus);
      return 0;
    }
    if (arg == "--startup-only") {
      args.startup_only = true;
      continue;
    }
    if (arg == "--expect-plane" && i + 1 < argc && (std::strcmp(argv[i + 1], "nccl") == 0 ||
                                                    std::strcmp(argv[i + 1], "staging") == 0)) {
      args.staging = std::strcmp(argv[++i], "staging") == 0;
      continue;
    }
    std::fprintf(stderr, "rt_gpu_test: unknown argument '%s' (see --help)\n", argv[i]);
    return 2;
  }
  return korovod::gputest::run(args);
}
