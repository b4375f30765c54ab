// Pod status as a kubelet reports it, computed from what the local runtime knows about each
// container (pure: no processes, no API). Phases: Pending until a container first runs;
// Running while one runs or waits to be restarted; Succeeded / Failed once every container
// ended for good. Conditions: PodScheduled, Initialized, ContainersReady, Ready.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "kube/client.h"

namespace local {

using TimePoint = std::chrono::system_clock::time_point;

struct ContainerRunState {
  enum class State { Waiting, Running, Terminated };
  std::string name;
  State state = State::Waiting;
  std::string reason;   // Waiting: ContainerCreating, CrashLoopBackOff, ...; Terminated: Completed, Error
  std::string message;
  int exit_code = 0;    // Terminated
  int restart_count = 0;
  std::optional<TimePoint> started_at, finished_at;
  std::optional<int> last_exit_code;  // lastState.terminated after a restart
  std::optional<TimePoint> last_started_at, last_finished_at;
  bool ever_started = false;
};

struct PodRunState {
  std::vector<ContainerRunState> containers;
  std::optional<TimePoint> start_time;
  std::string pod_ip = "127.0.0.1";
  std::string host_ip = "127.0.0.1";
  std::string failure_reason, failure_message;  // e.g. a volume that could not be made
};

// Whether a container that ended with exit_code starts again under the pod's restartPolicy.
bool should_restart(const std::string& restart_policy, int exit_code);

std::string pod_phase(const PodRunState& state);

// The reason Kubernetes gives a terminated container: Completed (0), Error, or OOMKilled-like
// signals are reported as Error too.
std::string termination_reason(int exit_code);

// .status of the pod; condition transition times are kept from old_status when unchanged.
kube::Object pod_status_json(const PodRunState& state, TimePoint now,
                             const kube::Object& old_status);

}  // namespace local
