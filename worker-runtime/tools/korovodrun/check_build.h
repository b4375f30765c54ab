// korovodrun --check-build (horovodrun -cb): what the korovod build this korovodrun came from
// was built with (korovodrun links the runtime's TCP pieces statically, so these are facts of
// the build, recorded when it was compiled), and which Python frameworks can import korovod
// here: as horovodrun imports each framework's extension, korovodrun asks the Python on PATH
// (a C++ binary cannot import Python modules itself).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "korovod/config.h"

namespace korovod::launcher {

struct FrameworkCheck {
  std::string name;                  // "PyTorch"
  std::vector<std::string> command;  // what was run to find out
  bool available = false;            // the command exited 0
};

struct BuildInfo {
  std::string version;
  bool mpi = false;    // libkorovod_mpi.so (MPI controller and CPU data plane) was built
  bool nccl = false;   // libkorovod's NCCL data plane for GPU tensors was built
  std::string mpirun;  // mpirun found on PATH ("" when none: --mpi cannot run)
  std::vector<FrameworkCheck> frameworks;
};

// Runs a check command (argv[0] looked up on the caller's PATH) and says whether it exited 0.
using CommandProbe = std::function<bool(const std::vector<std::string>& argv)>;

// The commands that tell whether each framework imports korovod: `python3 -c 'import
// korovod.torch'`; TensorFlow and Keras through `korovod-tf-python` where it is on PATH (the
// worker image runs TensorFlow from its own venv), else python3.
std::vector<FrameworkCheck> framework_checks(const EnvMap& env);

// This build's facts, mpirun looked up on env's PATH, and each framework check run by `probe`.
BuildInfo detect_build_info(const EnvMap& env, const CommandProbe& probe);
std::string check_build_report(const BuildInfo& info);

}  // namespace korovod::launcher
