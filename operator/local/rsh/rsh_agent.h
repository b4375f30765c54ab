// The rsh agent mpirun uses in local mode (OMPI_MCA_plm_rsh_agent=korovod-rsh): called as ssh
// would be, `korovod-rsh [ssh options] HOST COMMAND...`, it runs COMMAND (orted ...) with
// /bin/sh -c inside the running pod that HOST names: that pod's environment, volumes, working
// directory and hostname, read from the context file the pod runtime wrote for it.
// HOST is "<pod>[.<subdomain>.<namespace>.svc...]"; without a namespace label the caller's
// KOROVOD_POD_NAMESPACE is used. The agent waits up to 60 s for the pod to be running, as ssh
// retries a connection (ConnectionAttempts).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "kube/clock.h"
#include "local/sandbox/sandbox.h"

namespace local {

struct RshRequest {
  std::string host;
  std::string command;  // the remaining arguments joined by spaces, as ssh sends them
};

// Parses the arguments after argv[0]; ssh options with a value (-o -p -l -i -F -E -J) and flags
// are skipped. Throws std::invalid_argument when no host or no command is given.
RshRequest parse_rsh_args(const std::vector<std::string>& args);

// (namespace, pod name) that a host name addresses.
std::pair<std::string, std::string> pod_of_host(const std::string& host,
                                                const std::string& default_ns);

// Every process the agent starts carries KOROVOD_RSH_POD=<pod dir> in its environment (and so
// do their children): the pod runtime finds them by it when the pod stops, because they are not
// the pod's own processes (they descend from the launcher's mpirun or korovodrun), yet on a node
// they would die with the worker pod's sshd session.
inline constexpr const char* kRshPodEnv = "KOROVOD_RSH_POD";

// What to exec to run the request inside the pod whose directory is pod_dir.
Exec rsh_exec(const RshRequest& request, const std::filesystem::path& pod_dir);

// Live processes (not zombies) under `proc` whose environment has KOROVOD_RSH_POD=pod_dir.
std::vector<pid_t> rsh_processes(const std::filesystem::path& pod_dir,
                                 const std::filesystem::path& proc = "/proc");

// SIGTERM to each of them, SIGKILL to those still alive after `grace` on `clock`. Returns how
// many were found.
int stop_rsh_processes(const std::filesystem::path& pod_dir, std::chrono::milliseconds grace,
                       kube::Clock& clock);

}  // namespace local
