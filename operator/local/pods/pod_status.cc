#include "local/pods/pod_status.h"

#include "kube/clock.h"
#include "local/sandbox/pod_env.h"

namespace local {
namespace {

using State = ContainerRunState::State;

kube::Object container_state_json(const ContainerRunState& c) {
  switch (c.state) {
    case State::Waiting:
      return {{"waiting", {{"reason", c.reason}, {"message", c.message}}}};
    case State::Running:
      return {{"running", {{"startedAt", kube::format_time(c.started_at.value_or(TimePoint{}))}}}};
    case State::Terminated:
      break;
  }
  kube::Object t = {{"exitCode", c.exit_code}, {"reason", c.reason}};
  if (!c.message.empty()) t["message"] = c.message;
  if (c.started_at) t["startedAt"] = kube::format_time(*c.started_at);
  if (c.finished_at) t["finishedAt"] = kube::format_time(*c.finished_at);
  return {{"terminated", t}};
}

kube::Object condition(const std::string& type, bool value, const std::string& reason,
                       TimePoint now, const kube::Object& old_status) {
  const std::string status = value ? "True" : "False";
  std::string when = kube::format_time(now);
  for (const auto& c : field(old_status, "conditions")) {
    if (c.value("type", "") == type && c.value("status", "") == status) {
      when = c.value("lastTransitionTime", when);
    }
  }
  kube::Object out = {{"type", type}, {"status", status}, {"lastTransitionTime", when},
                      {"lastProbeTime", nullptr}};
  if (!reason.empty()) out["reason"] = reason;
  return out;
}

}  // namespace

bool should_restart(const std::string& restart_policy, int exit_code) {
  if (restart_policy == "Never") return false;
  if (restart_policy == "OnFailure") return exit_code != 0;
  return true;  // Always, the default
}

std::string termination_reason(int exit_code) { return exit_code == 0 ? "Completed" : "Error"; }

std::string pod_phase(const PodRunState& state) {
  if (!state.failure_reason.empty()) return "Failed";
  bool all_terminated = !state.containers.empty();
  bool all_zero = true;
  bool any_started = false;
  for (const auto& c : state.containers) {
    any_started = any_started || c.ever_started;
    if (c.state != State::Terminated) all_terminated = false;
    if (c.state == State::Terminated && c.exit_code != 0) all_zero = false;
  }
  if (all_terminated) return all_zero ? "Succeeded" : "Failed";
  return any_started ? "Running" : "Pending";
}

kube::Object pod_status_json(const PodRunState& state, TimePoint now,
                             const kube::Object& old_status) {
  const std::string phase = pod_phase(state);
  bool all_running = !state.containers.empty();
  kube::Object statuses = kube::Object::array();
  for (const auto& c : state.containers) {
    all_running = all_running && c.state == State::Running;
    kube::Object s = {{"name", c.name},
                      {"state", container_state_json(c)},
                      {"ready", c.state == State::Running},
                      {"started", c.state == State::Running},
                      {"restartCount", c.restart_count},
                      {"image", ""},
                      {"imageID", ""},
                      {"lastState", kube::Object::object()}};
    if (c.last_exit_code) {
      ContainerRunState last = c;
      last.state = State::Terminated;
      last.exit_code = *c.last_exit_code;
      last.reason = termination_reason(*c.last_exit_code);
      last.message.clear();
      last.started_at = c.last_started_at;
      last.finished_at = c.last_finished_at;
      s["lastState"] = container_state_json(last);
    }
    statuses.push_back(s);
  }
  const bool done = phase == "Succeeded" || phase == "Failed";
  const std::string not_ready = done ? "PodCompleted" : "ContainersNotReady";
  kube::Object status = {
      {"phase", phase},
      {"hostIP", state.host_ip},
      {"containerStatuses", statuses},
      {"conditions",
       kube::Object::array(
           {condition("PodScheduled", true, "", now, old_status),
            condition("Initialized", true, "", now, old_status),
            condition("ContainersReady", all_running, all_running ? "" : not_ready, now, old_status),
            condition("Ready", all_running, all_running ? "" : not_ready, now, old_status)})}};
  if (!state.pod_ip.empty()) {  // as the API shows a pod that has no address yet: no podIP
    status["podIP"] = state.pod_ip;
    status["podIPs"] = kube::Object::array({{{"ip", state.pod_ip}}});
  }
  if (state.start_time) status["startTime"] = kube::format_time(*state.start_time);
  if (!state.failure_reason.empty()) {
    status["reason"] = state.failure_reason;
    status["message"] = state.failure_message;
  }
  return status;
}

}  // namespace local
