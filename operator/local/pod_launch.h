// From a pod's container to a LaunchSpec: the command (command + args; with no command the
// args alone, since the image's ENTRYPOINT is not known locally), the environment (the host's
// PATH with extra directories in front, HOSTNAME, HOME, what the runtime adds, then the
// container's env), the working directory (workingDir, else the pod's directory), the mounts
// and the hostname (spec.hostname, else the pod name).
// Also the context file that lets the rsh agent run a command "inside" a running pod.
#pragma once

#include <filesystem>

#include "local/sandbox.h"

namespace local {

struct LaunchDefaults {
  std::vector<std::string> path_prepend;  // directories put in front of the host's PATH
  std::string host_path_env;              // the host's PATH
  std::string home = "/root";
  EnvList extra_env;                      // added before the container's own env
};

LaunchSpec container_launch(const kube::Object& pod, const kube::Object& container,
                            const EnvList& container_env, const std::vector<Mount>& mounts,
                            const std::filesystem::path& pod_dir, const LaunchDefaults& defaults);

// <pod_dir>/context.json: the first container's spec without its command, plus isolation.
void write_pod_context(const std::filesystem::path& pod_dir, const LaunchSpec& spec,
                       Isolation isolation, const std::string& bwrap_path);
struct PodContext {
  LaunchSpec spec;
  Isolation isolation = Isolation::Bwrap;
  std::string bwrap_path;
};
PodContext read_pod_context(const std::filesystem::path& pod_dir);

}  // namespace local
