#include "mpijob/status.h"

#include <algorithm>

#include "kube/clock.h"
#include "kube/object_meta.h"
#include "mpijob/membership.h"

namespace mpijob {
namespace {

constexpr size_t kMessageLimit = 1024;

std::string truncate(std::string msg) {
  if (msg.size() > kMessageLimit) msg.resize(kMessageLimit);
  return msg;
}

std::string job_ref(const MPIJob& job) { return job.ns() + "/" + job.name(); }

std::string phase(const kube::Object& pod) {
  return member<std::string>(child(pod, "status"), "phase").value_or("");
}

const kube::Object* job_condition(const kube::Object& job, const std::string& type) {
  for (const auto& c : child(child(job, "status"), "conditions")) {
    if (member<std::string>(c, "type") == type && member<std::string>(c, "status") == "True") {
      return &c;
    }
  }
  return nullptr;
}

bool emit_if(StatusUpdate& u, bool changed, const char* type, const std::string& reason,
             const std::string& message) {
  if (changed) u.events.push_back({type, reason, message});
  return changed;
}

// a. The Suspended condition; resuming resets startTime.
void update_suspended(StatusUpdate& u, const MPIJob& job, const std::string& now) {
  if (job.suspended()) {
    emit_if(u, set_condition(u.status, "Suspended", "True", kReasonSuspended, "MPIJob suspended", now),
            "Normal", kReasonSuspended, "MPIJob suspended");
  } else if (u.status.condition("Suspended") != nullptr) {
    if (emit_if(u, set_condition(u.status, "Suspended", "False", kReasonResumed, "MPIJob resumed", now),
                "Normal", kReasonResumed, "MPIJob resumed")) {
      u.status.start_time = now;
    }
  }
}

const kube::Object* last_failed_pod(const std::vector<kube::Object>& pods) {
  const kube::Object* last = nullptr;
  for (const auto& p : pods) {
    if (phase(p) != "Failed") continue;
    auto created = [](const kube::Object& o) {
      return member<std::string>(child(o, "metadata"), "creationTimestamp").value_or("");
    };
    if (last == nullptr || created(*last) < created(p)) last = &p;
  }
  return last;
}

// The terminated state of the container that failed (non-zero exit first), or nullptr.
const kube::Object* failed_container(const kube::Object& pod) {
  const kube::Object* any = nullptr;
  for (const auto& cs : child(child(pod, "status"), "containerStatuses")) {
    const auto& term = child(child(cs, "state"), "terminated");
    if (term.empty()) continue;
    if (member<int64_t>(term, "exitCode").value_or(0) != 0) return &cs;
    if (any == nullptr) any = &cs;
  }
  return any;
}

// d. The launcher Job failed: copy its reason; BackoffLimitExceeded names the last failed pod.
void launcher_failed(StatusUpdate& u, const MPIJob& job, const kube::Object& launcher,
                     const std::vector<kube::Object>& pods, const std::string& now) {
  const kube::Object* cond = job_condition(launcher, "Failed");
  std::string reason = member<std::string>(*cond, "reason").value_or("");
  std::string msg = member<std::string>(*cond, "message").value_or("");
  if (reason.empty()) reason = kReasonFailed;
  if (msg.empty()) msg = "MPIJob " + job_ref(job) + " has failed";
  if (reason == kReasonBackoffLimitExceeded) {
    if (const kube::Object* pod = last_failed_pod(pods)) {
      std::string pod_reason = member<std::string>(child(*pod, "status"), "reason").value_or("");
      std::string pod_msg = member<std::string>(child(*pod, "status"), "message").value_or("");
      const kube::Object* c = failed_container(*pod);
      if (pod_reason.empty() && c != nullptr) {  // korovod: say why when the pod does not
        pod_reason = member<std::string>(child(child(*c, "state"), "terminated"), "reason").value_or("");
      }
      if (pod_msg.empty()) pod_msg = describe_pod_failure(*pod);
      reason += "/" + pod_reason;
      msg += ": " + pod_msg;
    }
  }
  mark_failed(u, reason, truncate(msg), now);
}

// b-d. Launcher replica status and outcome.
void update_from_launcher(StatusUpdate& u, const MPIJob& job, const kube::Object& launcher,
                          const std::vector<kube::Object>& pods, const std::string& now) {
  auto& rs = u.status.replica_statuses[to_string(ReplicaType::Launcher)];
  rs.active = static_cast<int32_t>(
      std::count_if(pods.begin(), pods.end(), [](const auto& p) { return phase(p) == "Running"; }));
  rs.failed = member<int32_t>(child(launcher, "status"), "failed").value_or(0);
  if (job_condition(launcher, "Complete") != nullptr) {
    rs.succeeded = 1;
    if (!u.status.completion_time) {
      u.status.completion_time =
          member<std::string>(child(launcher, "status"), "completionTime").value_or(now);
    }
    const std::string msg = "MPIJob " + job_ref(job) + " successfully completed.";
    if (emit_if(u, set_condition(u.status, "Succeeded", "True", kReasonSucceeded, msg, now), "Normal",
                kReasonSucceeded, msg)) {
      u.counters.push_back(Counter::JobsSuccessful);
    }
  } else if (job_condition(launcher, "Failed") != nullptr) {
    launcher_failed(u, job, launcher, pods, now);
  }
}

bool counted(const JobStatus& s, const std::string& uid) {
  return std::find(s.restarted_pod_uids.begin(), s.restarted_pod_uids.end(), uid) !=
         s.restarted_pod_uids.end();
}

// korovod: restart failed workers within the budget shared with launcher failures.
void handle_worker_failures(StatusUpdate& u, const MPIJob& job,
                            const std::vector<const kube::Object*>& failed, const std::string& now) {
  const int32_t limit = job.backoff_limit().value_or(kDefaultBackoffLimit);
  const int32_t launcher_failures = u.status.replica_statuses["Launcher"].failed;
  for (const kube::Object* pod : failed) {
    const std::string uid = kube::uid_of(*pod), name = kube::name_of(*pod);
    if (counted(u.status, uid)) {
      u.restart_pods.push_back(name);  // counted before; its deletion is still pending
      continue;
    }
    const std::string why = describe_pod_failure(*pod);
    if (launcher_failures + u.status.restart_count + 1 > limit) {
      const kube::Object* c = failed_container(*pod);
      std::string cname = c ? member<std::string>(*c, "name").value_or("") : "";
      int64_t code = c ? member<int64_t>(child(child(*c, "state"), "terminated"), "exitCode").value_or(-1) : -1;
      mark_failed(u, std::string(kReasonBackoffLimitExceeded) + "/" + name + "/" + cname + "/ExitCode" +
                         std::to_string(code),
                  truncate("MPIJob " + job_ref(job) + " has failed: " + why +
                           "; restart budget exhausted (backoffLimit " + std::to_string(limit) +
                           ", " + std::to_string(launcher_failures) + " launcher failures, " +
                           std::to_string(u.status.restart_count) + " worker restarts)"),
                  now);
      return;
    }
    ++u.status.restart_count;
    u.status.restarted_pod_uids.push_back(uid);
    u.restart_pods.push_back(name);
    const std::string msg = truncate("MPIJob " + job_ref(job) + " is restarting " + name + ": " + why +
                                     " (restart " + std::to_string(u.status.restart_count) + ", backoffLimit " +
                                     std::to_string(limit) + ")");
    set_condition(u.status, "Restarting", "True", kReasonRestarting, msg, now);
    u.events.push_back({"Warning", kReasonRestarting, msg});  // one per counted failure
  }
}

// Forget counted UIDs whose pods are gone, so the list stays short.
void prune_restarted(JobStatus& s, const std::vector<kube::Object>& workers) {
  std::erase_if(s.restarted_pod_uids, [&](const std::string& uid) {
    return std::none_of(workers.begin(), workers.end(),
                        [&](const kube::Object& p) { return kube::uid_of(p) == uid; });
  });
}

// e. Worker counts, eviction and (korovod) worker restarts.
void update_from_workers(StatusUpdate& u, const MPIJob& job, const std::vector<kube::Object>& workers,
                         const std::string& now) {
  auto& rs = u.status.replica_statuses[to_string(ReplicaType::Worker)];
  rs.selector = worker_label_selector(job.name());
  u.status.ready_workers = static_cast<int32_t>(listed_workers(job, workers).size());
  int evicted = 0;
  std::vector<const kube::Object*> failed;
  for (const auto& p : workers) {
    const std::string ph = phase(p);
    if (ph == "Running") ++rs.active;
    if (ph == "Succeeded") ++rs.succeeded;
    if (ph != "Failed") continue;
    ++rs.failed;
    if (member<std::string>(child(p, "status"), "reason") == "Evicted") {
      ++evicted;
    } else if (!kube::has_deletion_timestamp(p)) {
      failed.push_back(&p);
    }
  }
  prune_restarted(u.status, workers);
  const int32_t limit = job.backoff_limit().value_or(kDefaultBackoffLimit);
  const int32_t launcher_failures = u.status.replica_statuses["Launcher"].failed;
  if (u.status.restart_count > 0 && launcher_failures + u.status.restart_count > limit) {
    mark_failed(u, kReasonBackoffLimitExceeded,
                "MPIJob " + job_ref(job) + " has failed: " + std::to_string(launcher_failures) +
                    " launcher failures and " + std::to_string(u.status.restart_count) +
                    " worker restarts exceed backoffLimit " + std::to_string(limit),
                now);
  }
  if (evicted > 0) {
    mark_failed(u, kReasonEvicted,
                std::to_string(evicted) + "/" + std::to_string(workers.size()) + " workers are evicted",
                now);
  }
  if (!is_finished(u.status) && !job.suspended()) handle_worker_failures(u, job, failed, now);
}

// f. The Running condition.
void update_running(StatusUpdate& u, const MPIJob& job, bool has_launcher,
                    const std::vector<kube::Object>& launcher_pods,
                    const std::vector<kube::Object>& workers, const std::string& now) {
  const std::string msg = "MPIJob " + job_ref(job) + " is running.";
  auto running = [](const kube::Object& p) { return phase(p) == "Running"; };
  if (job.suspended()) {
    set_condition(u.status, "Running", "False", kReasonSuspended,
                  "MPIJob " + job_ref(job) + " is suspended.", now);
  } else if (is_finished(u.status)) {
    if (u.status.condition("Running") != nullptr) return;
    const std::string at = u.status.completion_time.value_or(now);
    Condition c{"Running", "False", kReasonRunning, msg, at, at};
    // Before the terminal condition, so the last condition still tells the job's state.
    u.status.conditions.insert(u.status.conditions.end() - 1, c);
  } else if (has_launcher && std::any_of(launcher_pods.begin(), launcher_pods.end(), running) &&
             std::all_of(workers.begin(), workers.end(), running)) {
    emit_if(u, set_condition(u.status, "Running", "True", kReasonRunning, msg, now), "Normal",
            kReasonRunning, "MPIJob " + job_ref(job) + " is running");
  }
}

}  // namespace

bool set_condition(JobStatus& s, const std::string& type, const std::string& status,
                   const std::string& reason, const std::string& message, const std::string& now) {
  Condition c{type, status, reason, message, now, now};
  if (const Condition* cur = s.condition(type)) {
    if (cur->status == status && cur->reason == reason) return false;
    if (cur->status == status) c.last_transition_time = cur->last_transition_time;
  }
  const bool terminal = type == "Failed" || type == "Succeeded";
  std::vector<Condition> kept;
  for (Condition old : s.conditions) {
    if (old.type == type) continue;
    if ((type == "Running" && old.type == "Restarting") || (type == "Restarting" && old.type == "Running")) {
      continue;
    }
    if (terminal && (old.type == "Running" || old.type == "Failed" || old.type == "Restarting")) {
      old.status = "False";
    }
    kept.push_back(old);
  }
  kept.push_back(c);
  s.conditions = std::move(kept);
  return true;
}

bool is_finished(const JobStatus& s) { return s.has_true("Succeeded") || s.has_true("Failed"); }

void mark_failed(StatusUpdate& u, const std::string& reason, const std::string& message,
                 const std::string& now) {
  if (!u.status.completion_time) u.status.completion_time = now;
  const bool was_failed = u.status.has_true("Failed");
  if (set_condition(u.status, "Failed", "True", reason, message, now) && !was_failed) {
    u.events.push_back({"Warning", reason, message});
    u.counters.push_back(Counter::JobsFailed);
  }
}

std::string describe_pod_failure(const kube::Object& pod) {
  std::string out = "pod " + kube::name_of(pod);
  if (const kube::Object* c = failed_container(pod)) {
    const auto& term = child(child(*c, "state"), "terminated");
    out += " container " + member<std::string>(*c, "name").value_or("") + " exited with code " +
           std::to_string(member<int64_t>(term, "exitCode").value_or(-1));
    std::string reason = member<std::string>(term, "reason").value_or("");
    if (!reason.empty()) out += " (" + reason + ")";
    return out;
  }
  const auto& st = child(pod, "status");
  out += " failed";
  std::string reason = member<std::string>(st, "reason").value_or("");
  std::string message = member<std::string>(st, "message").value_or("");
  if (!reason.empty()) out += " (" + reason + ")";
  if (!message.empty()) out += ": " + message;
  return out;
}

void update_job_status(StatusUpdate& u, const MPIJob& job, const kube::Object* launcher_job,
                       const std::vector<kube::Object>& launcher_pods,
                       const std::vector<kube::Object>& worker_pods,
                       std::chrono::system_clock::time_point now_tp) {
  const std::string now = kube::format_time(now_tp);
  update_suspended(u, job, now);
  // ReplicaStatuses are rebuilt from {} on every sync, as the reference does.
  u.status.replica_statuses[to_string(ReplicaType::Launcher)] = ReplicaStatus{};
  u.status.replica_statuses[to_string(ReplicaType::Worker)] = ReplicaStatus{};
  if (launcher_job != nullptr) {
    update_from_launcher(u, job, *launcher_job, launcher_pods, now);
  }
  update_from_workers(u, job, worker_pods, now);
  update_running(u, job, launcher_job != nullptr, launcher_pods, worker_pods, now);
}

}  // namespace mpijob
