// `korovod kubelet`: the local pod runtime serving a real API server. Registers a Node (Ready,
// capacity cpu / memory / pods, InternalIP 127.0.0.1), keeps it Ready with node status updates
// and a coordination.k8s.io Lease in kube-node-lease, and runs the pods the scheduler binds to
// it (spec.nodeName) with the rsh-agent wiring of local mode, reporting status through the API.
// Time is the kube::Clock it is given (heartbeats, the stop check), processes are started with
// the ProcessLauncher it is given, and the host's PATH comes in its options: nothing here reads
// the environment.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <iosfwd>

#include "kube/client.h"
#include "kube/clock.h"
#include "local/sandbox/pod_env.h"
#include "local/process/process_launcher.h"

namespace local {

struct KubeletOptions {
  std::string node_name;
  std::filesystem::path work_dir;
  std::filesystem::path bin_dir;
  std::string host_path = "/usr/local/bin:/usr/bin:/bin";  // the host's PATH, behind bin_dir in pods
  EnvList host_sanitizer_env;  // as LocalRunOptions::host_sanitizer_env
  std::chrono::seconds heartbeat{10};
  int lease_seconds = 40;
};

kube::Object node_object(const std::string& name, int cpus, int64_t memory_kib);
kube::Object lease_object(const std::string& node, int lease_seconds, kube::Clock& clock);

// Runs until `stop` (checked every 200 ms on `clock`); returns the exit code.
int run_kubelet(kube::Client& client, kube::Clock& clock, ProcessLauncher& launcher,
                const KubeletOptions& options, const std::atomic<bool>& stop, std::ostream& out);

}  // namespace local
