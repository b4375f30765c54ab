// The local pod runtime: a kubelet that runs pods as host processes. It polls the pods it
// serves (every pod in local mode; those with spec.nodeName == node in `korovod kubelet`),
// materializes volumes under <work_dir>/pods/<ns>/<name>, starts each container in its sandbox
// (sandbox.h), restarts containers as restartPolicy says (the kubelet's back-off: 10 s doubling
// to 5 min; restart_backoff),
// reports phase, container states, exit codes, restartCount and conditions with update_status,
// keeps configMap / secret volumes of running pods up to date (volume_refresh), and stops a
// pod's process groups — and what korovod-rsh started in the pod (rsh_agent.h) — (SIGTERM,
// grace, SIGKILL) when the pod is deleted. Containers are started with the ProcessLauncher it is
// given (HostProcessLauncher in production) and waited for on its kube::Clock.
// With Isolation::Docker each container is a docker container of its image instead
// (docker_container.h: started, signalled and removed through the same launcher), the pod's
// volumes get a kubelet's ownership for the container's user (apply_volume_ownership), and
// podIP is the container's address on the job's network (docker inspect).
// Init containers are not run (documented in operator/local/README.md).
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "kube/client.h"
#include "kube/clock.h"
#include "kube/mutex.h"
#include "local/docker/docker_run.h"
#include "local/pods/pod_launch.h"
#include "local/pods/pod_status.h"
#include "local/process/process_launcher.h"

namespace local {

struct RuntimeOptions {
  std::filesystem::path work_dir;
  std::string node_name;  // "": serve every pod; else only pods bound to this node
  Isolation isolation = Isolation::Bwrap;
  std::string bwrap_path = "/usr/bin/bwrap";
  DockerOptions docker;  // with Isolation::Docker
  LaunchDefaults defaults;
  std::chrono::milliseconds poll_interval{100};
  std::chrono::milliseconds max_grace{5000};  // cap on terminationGracePeriodSeconds
  // How often a running pod's configMap / secret / projected volumes are rewritten from their
  // sources (the kubelet's sync period is about a minute; local mode is prompt so that
  // discover_hosts.sh follows the operator within a second or two).
  std::chrono::milliseconds volume_refresh{1000};
  // Wait before a failed container's restart n (0-based): base * 2^n, at most max (the kubelet's
  // 10 s and 300 s; tests shorten them).
  std::chrono::milliseconds restart_backoff{10'000};
  std::chrono::milliseconds max_restart_backoff{300'000};
  // Lets the caller change a container's launch (local mode replaces the workers' sshd).
  std::function<void(const kube::Object& pod, const kube::Object& container, LaunchSpec&)> adjust;
  // Each output line of a container: (pod name, container name, line).
  std::function<void(const std::string&, const std::string&, const std::string&)> log;
  // Each container restart, as it happens: (pod name, container name, new restartCount).
  std::function<void(const std::string&, const std::string&, int)> on_restart;
};

// The kubelet's crash-loop back-off before restart number `restarts` (0 = the first restart).
std::chrono::milliseconds restart_backoff(int restarts, std::chrono::milliseconds base,
                                          std::chrono::milliseconds max);

class PodRuntime {
 public:
  PodRuntime(kube::Client& client, kube::Clock& clock, ProcessLauncher& launcher,
             RuntimeOptions options);
  ~PodRuntime();  // stops every pod
  void start();
  void stop();    // stops every pod's processes and the loop
  std::filesystem::path pod_dir(const std::string& ns, const std::string& name) const;

 private:
  struct Container {
    kube::Object spec;
    LaunchSpec launch;
    std::unique_ptr<LaunchedProcess> process;
    std::chrono::steady_clock::time_point restart_at{};
    ContainerRunState state;
    std::string docker_name;  // Isolation::Docker: the running container's name
    int docker_serial = 0;    // containers started so far (each start is a new one)
  };
  struct Pod {
    kube::Object object;
    std::vector<Container> containers;
    PodRunState run;
    kube::Object reported;  // last status written
    std::chrono::steady_clock::time_point next_volume_refresh{};
    bool pod_ip_known = false;  // Isolation::Docker: podIP read from the running container
  };

  void loop();
  void sync_once();
  bool serves(const kube::Object& pod) const;
  void start_pod(const kube::Object& pod);
  void step_containers(Pod& pod);
  void start_container(const Pod& pod, Container& c);
  std::unique_ptr<LaunchedProcess> launch(const Pod& pod, Container& c, LineSink sink);
  void learn_pod_ip(Pod& pod);
  bool docker() const { return options_.isolation == Isolation::Docker; }
  void stop_pod(Pod& pod);
  void stop_pods(const std::vector<Pod*>& pods);
  void finish_deleted_pod(Pod& pod);
  void report(Pod& pod);
  void refresh_pod_volumes(Pod& pod);

  kube::Client& client_;
  kube::Clock& clock_;
  ProcessLauncher& launcher_;
  const RuntimeOptions options_;
  std::map<std::string, Pod> pods_;  // by uid; touched only by the loop thread (and stop())
  kube::Mutex mu_;
  std::condition_variable cv_;
  bool stopping_ KOROVOD_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace local
