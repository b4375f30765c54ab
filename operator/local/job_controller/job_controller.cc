#include "local/job_controller/job_controller.h"

#include "kube/object_meta.h"
#include "local/sandbox/pod_env.h"

namespace local {
namespace {

std::string phase_of(const kube::Object& pod) { return field(pod, "status").value("phase", ""); }

bool has_condition(const kube::Object& job, const std::string& type) {
  for (const auto& c : field(field(job, "status"), "conditions")) {
    if (c.value("type", "") == type && c.value("status", "") == "True") return true;
  }
  return false;
}

int container_restarts(const kube::Object& pod) {
  int n = 0;
  for (const auto& cs : field(field(pod, "status"), "containerStatuses")) n += cs.value("restartCount", 0);
  return n;
}

}  // namespace

void JobController::sync_all() {
  for (const auto& job : client_.list(kube::resources::kJobs, "", {}).items) {
    try {
      sync(job);
    } catch (const kube::ApiError& e) {
      if (!kube::is_conflict(e) && !kube::is_not_found(e)) throw;  // retried next pass
    }
  }
}

void JobController::sync(const kube::Object& job) {
  if (has_condition(job, "Complete") || has_condition(job, "Failed")) return;
  if (field(job, "spec").value("suspend", false)) return;
  const std::string ns = kube::namespace_of(job), uid = kube::uid_of(job);
  std::vector<kube::Object> active;
  int failed = 0, succeeded = 0, restarts = 0;
  kube::Object last_failed_end;
  for (const auto& pod : client_.list(kube::resources::kPods, ns, {}).items) {
    if (kube::controller_uid(pod) != uid) continue;
    const std::string ph = phase_of(pod);
    if (ph == "Succeeded") ++succeeded;
    else if (ph == "Failed") ++failed;
    else if (!kube::has_deletion_timestamp(pod)) active.push_back(pod), restarts += container_restarts(pod);
  }
  const auto& spec = field(job, "spec");
  const int limit = spec.value("backoffLimit", 6);
  const bool on_failure =
      field(field(spec, "template"), "spec").value("restartPolicy", "") == "OnFailure";
  kube::Object updated = job;
  auto& status = updated["status"];
  if (!status.contains("startTime")) status["startTime"] = kube::format_time(clock_.now());
  status["active"] = active.size();
  status["failed"] = failed;
  status["succeeded"] = succeeded;
  status["ready"] = std::count_if(active.begin(), active.end(),
                                  [](const auto& p) { return phase_of(p) == "Running"; });
  if (succeeded > 0) {
    status["completionTime"] = kube::format_time(clock_.now());
    return finish(updated, "Complete", "CompletionsReached", "Reached expected number of succeeded pods", active);
  }
  // As the real controller: failed pods beyond the limit, or (OnFailure) container restarts in
  // the active pods reaching it (pastBackoffLimitOnFailure: restarts >= limit, any restart when
  // the limit is 0).
  const bool restarts_exceed = on_failure && (limit == 0 ? restarts > 0 : restarts >= limit);
  if (failed > limit || restarts_exceed) {
    return finish(updated, "Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit", active);
  }
  if (auto deadline = spec.find("activeDeadlineSeconds"); deadline != spec.end()) {
    const auto started = kube::parse_time(status["startTime"].get<std::string>());
    if (clock_.now() - started > std::chrono::seconds(deadline->get<int64_t>())) {
      return finish(updated, "Failed", "DeadlineExceeded", "Job was active longer than specified deadline", active);
    }
  }
  if (active.empty()) {
    create_pod(job);
    status["active"] = 1;
  }
  if (updated["status"] != field(job, "status")) client_.update_status(kube::resources::kJobs, ns, updated);
}

void JobController::finish(kube::Object job, const std::string& type, const std::string& reason,
                           const std::string& message, const std::vector<kube::Object>& active) {
  const std::string ns = kube::namespace_of(job);
  for (const auto& pod : active) {
    try {
      client_.remove(kube::resources::kPods, ns, kube::name_of(pod), {});
    } catch (const kube::ApiError& e) {
      if (!kube::is_not_found(e)) throw;
    }
  }
  const std::string now = kube::format_time(clock_.now());
  // The real controller counts the pods it deletes on failure as failed (they never succeeded).
  if (type == "Failed") job["status"]["failed"] = job["status"].value("failed", 0) + static_cast<int>(active.size());
  job["status"]["active"] = 0;
  job["status"]["conditions"].push_back({{"type", type}, {"status", "True"}, {"reason", reason},
                                         {"message", message}, {"lastProbeTime", now},
                                         {"lastTransitionTime", now}});
  client_.update_status(kube::resources::kJobs, ns, job);
}

kube::Object JobController::create_pod(const kube::Object& job) {
  const auto& tmpl = field(field(job, "spec"), "template");
  const std::string name = kube::name_of(job), uid = kube::uid_of(job);
  kube::Object pod = {{"apiVersion", "v1"}, {"kind", "Pod"}};
  pod["metadata"] = field(tmpl, "metadata");
  pod["metadata"]["generateName"] = name + "-";
  pod["metadata"]["namespace"] = kube::namespace_of(job);
  for (const char* k : {"job-name", "batch.kubernetes.io/job-name"}) pod["metadata"]["labels"][k] = name;
  for (const char* k : {"controller-uid", "batch.kubernetes.io/controller-uid"}) pod["metadata"]["labels"][k] = uid;
  pod["metadata"]["ownerReferences"] = kube::Object::array(
      {{{"apiVersion", "batch/v1"}, {"kind", "Job"}, {"name", name}, {"uid", uid},
        {"controller", true}, {"blockOwnerDeletion", true}}});
  pod["spec"] = field(tmpl, "spec");
  return client_.create(kube::resources::kPods, kube::namespace_of(job), pod);
}

}  // namespace local
