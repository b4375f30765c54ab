// korovodrun --check-build (horovodrun -cb): what this korovodrun and its libkorovod were built
// with. Which Python frameworks can import korovod is not something a C++ binary can know; the
// report says how to find out instead.
#pragma once

#include <string>

#include "korovod/config.h"

namespace korovod::launcher {

struct BuildInfo {
  std::string version;
  std::string libkorovod_path;  // "" when it could not be found among the loaded objects
  bool mpi = false;             // the MPI controller and data plane can be loaded
  std::string mpi_how;          // "linked into libkorovod", "plugin <path>", or why not
  bool nccl = false;            // the NCCL data plane was compiled in
  std::string mpirun;           // mpirun found on PATH ("" when none: --mpi cannot run)
};

BuildInfo detect_build_info(const EnvMap& env);
std::string check_build_report(const BuildInfo& info);

}  // namespace korovod::launcher
