// korovodrun --check-build (horovodrun -cb): what the korovod build this korovodrun came from
// was built with (korovodrun links the runtime's TCP pieces statically, so these are facts of
// the build, recorded when it was compiled). Which Python frameworks can import korovod is not
// something a C++ binary can know; the report says how to find out instead.
#pragma once

#include <string>

#include "korovod/config.h"

namespace korovod::launcher {

struct BuildInfo {
  std::string version;
  bool mpi = false;    // libkorovod_mpi.so (MPI controller and CPU data plane) was built
  bool nccl = false;   // libkorovod's NCCL data plane for GPU tensors was built
  std::string mpirun;  // mpirun found on PATH ("" when none: --mpi cannot run)
};

// This build's facts, and mpirun looked up on env's PATH.
BuildInfo detect_build_info(const EnvMap& env);
std::string check_build_report(const BuildInfo& info);

}  // namespace korovod::launcher
