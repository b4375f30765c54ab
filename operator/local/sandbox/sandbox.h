// How a container process gets its pod's view of the machine.
//
// Bwrap (the default when bubblewrap works here): `bwrap --bind / / --dev-bind /dev /dev
// --proc /proc --unshare-pid --unshare-uts --hostname <pod> --die-with-parent --bind <vol>
// <mountPath> ... --chdir <dir> -- <command>`: the whole host filesystem plus the pod's volumes
// at their mount paths, the pod name as hostname, and a pid namespace so that killing the pod
// kills everything started in it (a pid namespace dies with its init). Mount points that do not
// exist on the host are created there empty by bwrap (the host's root is bound read-write).
//
// Rewrite (fallback when bubblewrap is missing or not permitted; printed once by the caller):
// no namespaces; every argument and environment value that names a mount path is rewritten to
// the volume's directory, and `hostname` inside the pod is the machine's name.
#pragma once

#include <string>
#include <vector>

#include "local/sandbox/pod_env.h"
#include "local/sandbox/volumes.h"

namespace local {

// Docker (`korovod run --runtime docker`): not a sandbox of host processes but a container of
// the pod's image (docker_run.h, docker_container.h); sandboxed() refuses it.
enum class Isolation { Bwrap, Rewrite, Docker };

struct LaunchSpec {
  std::vector<std::string> command;  // argv; argv[0] is looked up in env's PATH
  EnvList env;
  std::string working_dir;
  std::vector<Mount> mounts;
  std::string hostname;
};

// Checks that bubblewrap can create the namespaces we use; `why` says what failed.
bool bwrap_usable(const std::string& bwrap_path, std::string* why);

// The final argv and env to exec for spec under isolation.
struct Exec {
  std::vector<std::string> argv;
  EnvList env;
};
Exec sandboxed(const LaunchSpec& spec, Isolation isolation, const std::string& bwrap_path);

// Rewrite mode: `value` with a leading mount path (at a path boundary, also after ':' or '=')
// replaced by the mount's host path.
std::string rewrite_mount_paths(const std::string& value, const std::vector<Mount>& mounts);

}  // namespace local
