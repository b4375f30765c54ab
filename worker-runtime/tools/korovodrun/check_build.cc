#include "check_build.h"

#include <fmt/format.h>

#include "child_process.h"

namespace korovod::launcher {
namespace {

const char* check(bool yes) { return yes ? "X" : " "; }

std::string path_of(const EnvMap& env) {
  auto path = env.find("PATH");
  return path == env.end() ? "" : path->second;
}

std::string frameworks_report(const std::vector<FrameworkCheck>& frameworks) {
  std::string out;
  for (const FrameworkCheck& f : frameworks) {
    std::string how;
    for (const std::string& word : f.command) {
      if (!how.empty()) how += ' ';
      how += word.find(' ') == std::string::npos ? word : "'" + word + "'";
    }
    out += fmt::format("    [{}] {:<11}({})\n", check(f.available), f.name, how);
  }
  return out;
}

}  // namespace

std::vector<FrameworkCheck> framework_checks(const EnvMap& env) {
  const bool tf_wrapper = !os::find_in_path("korovod-tf-python", path_of(env)).empty();
  const std::string tf_python = tf_wrapper ? "korovod-tf-python" : "python3";
  return {
      {"PyTorch", {"python3", "-c", "import korovod.torch"}, false},
      {"TensorFlow", {tf_python, "-c", "import korovod.tensorflow"}, false},
      {"Keras", {tf_python, "-c", "import korovod.keras"}, false},
  };
}

BuildInfo detect_build_info(const EnvMap& env, const CommandProbe& probe) {
  BuildInfo info;
  info.version = KOROVODRUN_VERSION;
#ifdef KOROVODRUN_WITH_MPI
  info.mpi = true;
#endif
#ifdef KOROVODRUN_WITH_NCCL
  info.nccl = true;
#endif
  info.mpirun = os::find_in_path("mpirun", path_of(env));
  info.frameworks = framework_checks(env);
  for (FrameworkCheck& f : info.frameworks) f.available = probe(f.command);
  return info;
}

std::string check_build_report(const BuildInfo& b) {
  return fmt::format(
      "korovod v{}:\n"
      "\n"
      "Available Frameworks:\n"
      "{}"
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
      b.version, frameworks_report(b.frameworks), check(b.mpi), check(b.nccl), check(b.mpi),
      b.mpirun.empty() ? "not on PATH" : b.mpirun);
}

}  // namespace korovod::launcher
