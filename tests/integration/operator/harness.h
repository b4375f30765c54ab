// What the operator integration tests share: the korovod-operator binary as a subprocess,
// kubectl, MPIJob manifests, and the kubelet's / Job controller's part (writing pod status).
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

#include "kube/client.h"

namespace optest {

// $KOROVOD_BIN_DIR/korovod-operator (or next to the test binary).
std::string operator_binary();
// The testcluster's kubectl (DIR/bin/kubectl, never /usr/bin/kubectl).
std::string kubectl_binary();

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout + stderr
};
// Runs argv with stdin `input`; blocks up to `timeout`.
CommandResult run_command(const std::vector<std::string>& argv, const std::string& input = "",
                          std::chrono::seconds timeout = std::chrono::seconds(60));
CommandResult kubectl(const std::vector<std::string>& args, const std::string& input = "");

// Installs crds/kubeflow.org_mpijobs.yaml (server-side apply) and waits until it is served.
void install_mpijob_crd();
// Minimal PodGroup CRDs of scheduling.volcano.sh/v1beta1 and scheduling.x-k8s.io/v1alpha1.
void install_podgroup_crds();

// korovod-operator as a child process, logging to a file; killed (SIGKILL) when destroyed.
class OperatorProcess {
 public:
  explicit OperatorProcess(std::vector<std::string> args, std::string log_name = "operator",
                           std::vector<std::string> env = {});
  ~OperatorProcess();
  OperatorProcess(const OperatorProcess&) = delete;
  OperatorProcess& operator=(const OperatorProcess&) = delete;

  pid_t pid() const { return pid_; }
  void signal(int sig);
  // Waits for exit; the exit code (128+signal when killed), nullopt on timeout.
  std::optional<int> wait(std::chrono::milliseconds timeout);
  bool running();
  std::string log() const;  // what it wrote so far
  const std::string& log_path() const { return log_path_; }

 private:
  pid_t pid_ = -1;
  std::optional<int> exit_code_;
  std::string log_path_;
};

// Default flags for a test operator watching `ns` (no leader election, no probes).
std::vector<std::string> operator_args(const std::string& ns, std::vector<std::string> extra = {});

// --- manifests ---
struct JobSpec {
  std::string name = "pi";
  int workers = 2;
  std::string clean_pod_policy;  // "" = default
  std::optional<int> backoff_limit;
  std::optional<int> ttl;
  bool suspend = false;
  std::string launcher_creation_policy;  // "" = default
  std::string managed_by;
  std::string worker_restart_policy = "Never";
};
kube::Object mpijob(const JobSpec& spec);

// --- reads ---
std::optional<kube::Object> try_get(kube::Client& c, const kube::Resource& r,
                                    const std::string& ns, const std::string& name);
// status.conditions[type] (status "True"/"False"), or nullopt.
std::optional<kube::Object> condition(const kube::Object& job, const std::string& type);
bool has_condition(kube::Client& c, const std::string& ns, const std::string& job,
                   const std::string& type, const std::string& status = "True");
std::vector<kube::Object> worker_pods(kube::Client& c, const std::string& ns,
                                      const std::string& job);
std::vector<kube::Object> launcher_pods(kube::Client& c, const std::string& ns,
                                        const std::string& job);
std::vector<kube::Object> events_for(kube::Client& c, const std::string& ns,
                                     const std::string& name);

// --- what a kubelet would write ---
// Sets phase (and Ready when Running; reason/message when given; a terminated container with
// exit_code for Failed/Succeeded). Retries on conflict.
void set_pod_phase(kube::Client& c, const std::string& ns, const std::string& pod,
                   const std::string& phase, const std::string& reason = "",
                   const std::string& message = "", int exit_code = 0);
// Waits for the job's launcher pod (created by the real Job controller) and sets its phase.
std::string set_launcher_phase(kube::Client& c, const std::string& ns, const std::string& job,
                               const std::string& phase, int exit_code = 0);
void set_all_workers(kube::Client& c, const std::string& ns, const std::string& job,
                     const std::string& phase);

bool wait_for(const std::function<bool()>& pred,
              std::chrono::milliseconds timeout = std::chrono::seconds(30));

}  // namespace optest
