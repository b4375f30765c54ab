#include "check_build.h"

#include <fmt/format.h>

#include "child_process.h"

namespace korovod::launcher {
namespace {

const char* check(bool yes) { return yes ? "X" : " "; }

}  // namespace

BuildInfo detect_build_info(const EnvMap& env) {
  BuildInfo info;
  info.version = KOROVODRUN_VERSION;
#ifdef KOROVODRUN_WITH_MPI
  info.mpi = true;
#endif
#ifdef KOROVODRUN_WITH_NCCL
  info.nccl = true;
#endif
  auto path = env.find("PATH");
  info.mpirun = find_in_path("mpirun", path == env.end() ? "" : path->second);
  return info;
}

std::string check_build_report(const BuildInfo& b) {
  return fmt::format(
      "korovod v{}:\n"
      "\n"
      "Available Frameworks:\n"
      "    (Python packages: korovodrun cannot tell; python3 -c 'import korovod.torch' checks PyTorch)\n"
      "\n"
      "Available Controllers:\n"
      "    [{}] MPI    (libkorovod_mpi.so, loaded by libkorovod.so under mpirun)\n"
      "    [X] TCP    (rendezvous store; korovodrun's default, horovodrun's Gloo)\n"
      "\n"
      "Available Tensor Operations:\n"
      "    [{}] NCCL\n"
      "    [X] shared memory\n"
      "    [X] TCP\n"
      "    [{}] MPI\n"
      "\n"
      "mpirun for --mpi: {}\n",
      b.version, check(b.mpi), check(b.nccl), check(b.mpi), b.mpirun.empty() ? "not on PATH" : b.mpirun);
}

}  // namespace korovod::launcher
