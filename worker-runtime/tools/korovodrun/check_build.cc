#include "check_build.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <link.h>
#include <unistd.h>

#include <cstring>

#include "child_process.h"

namespace korovod::launcher {
namespace {

int remember_libkorovod(dl_phdr_info* info, size_t, void* out) {
  const char* name = info->dlpi_name;
  if (name && std::strstr(name, "/libkorovod.so")) {
    *static_cast<std::string*>(out) = name;
    return 1;
  }
  return 0;
}

std::string directory_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

const char* check(bool yes) { return yes ? "X" : " "; }

}  // namespace

BuildInfo detect_build_info(const EnvMap& env) {
  BuildInfo info;
  info.version = KOROVODRUN_VERSION;
  dl_iterate_phdr(remember_libkorovod, &info.libkorovod_path);
#ifdef KOROVODRUN_WITH_NCCL
  info.nccl = true;
#endif
  // libkorovod either links libmpi itself (then MPI is in this process already) or loads the
  // plugin libkorovod_mpi.so from its own directory when a job runs under mpirun.
  const std::string plugin = directory_of(info.libkorovod_path) + "/libkorovod_mpi.so";
  if (dlsym(RTLD_DEFAULT, "MPI_Init") != nullptr) {
    info.mpi = true;
    info.mpi_how = "linked into libkorovod";
  } else if (!info.libkorovod_path.empty() && access(plugin.c_str(), R_OK) == 0) {
    info.mpi = true;
    info.mpi_how = "plugin " + plugin;
  } else {
    info.mpi_how = info.libkorovod_path.empty() ? "libkorovod not found" : "no " + plugin;
  }
  auto path = env.find("PATH");
  info.mpirun = find_in_path("mpirun", path == env.end() ? "" : path->second);
  return info;
}

std::string check_build_report(const BuildInfo& b) {
  return fmt::format(
      "korovod v{}:\n"
      "\n"
      "Available Frameworks:\n"
      "    (Python packages: a C++ binary cannot tell; try\n"
      "     python3 -c 'import korovod.torch' for PyTorch)\n"
      "\n"
      "Available Controllers:\n"
      "    [{}] MPI    ({})\n"
      "    [X] TCP    (korovodrun's rendezvous store; horovodrun's Gloo)\n"
      "\n"
      "Available Tensor Operations:\n"
      "    [{}] NCCL\n"
      "    [X] shared memory\n"
      "    [X] TCP\n"
      "    [{}] MPI\n"
      "\n"
      "libkorovod: {}\n"
      "mpirun for --mpi: {}\n",
      b.version, check(b.mpi), b.mpi_how, check(b.nccl), check(b.mpi),
      b.libkorovod_path.empty() ? "not found" : b.libkorovod_path, b.mpirun.empty() ? "not on PATH" : b.mpirun);
}

}  // namespace korovod::launcher
