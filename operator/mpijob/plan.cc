// plan(): one sync of the reference's syncHandler, as data.
#include "mpijob/plan.h"

#include <stdexcept>

#include "kube/clock.h"
#include "kube/object_meta.h"
#include "mpijob/defaults.h"
#include "mpijob/plan_steps.h"
#include "mpijob/validation.h"

namespace mpijob {
namespace {

using detail::PlanContext;

std::vector<FieldError> all_errors(const MPIJob& job, const BuildOptions& opts) {
  std::vector<FieldError> errs = validate(job);
  try {
    resolve_network_profile(job, opts.network);
    wants_network_policy(job, opts.network_policy);
  } catch (const std::invalid_argument& e) {
    errs.push_back({FieldError::Type::Invalid, "metadata.annotations", "", e.what()});
  }
  return errs;
}

// korovod: ttlSecondsAfterFinished deletes the MPIJob itself (children follow by ownerRef).
void expire_after_ttl(Plan& p, const MPIJob& job, const JobStatus& s,
                      std::chrono::system_clock::time_point now) {
  auto ttl = job.ttl_seconds_after_finished();
  if (!ttl || !s.completion_time) return;
  const auto expiry = kube::parse_time(*s.completion_time) + std::chrono::seconds(*ttl);
  if (now >= expiry) {
    p.actions.push_back({Action::Verb::Delete, kMPIJobs,
                         {{"metadata", {{"name", job.name()}, {"uid", job.uid()}}}}, "mpijob", std::nullopt});
  } else {
    p.requeue_after = std::chrono::ceil<std::chrono::seconds>(expiry - now);
  }
}

// Step 6: a finished job only cleans up (per cleanPodPolicy) and waits for its TTL.
void plan_finished(PlanContext& c, std::chrono::system_clock::time_point now) {
  const std::string policy = c.job.clean_pod_policy();
  if (policy == "All" || policy == "Running") {
    detail::clean_up_workers(c);
    c.update.status.replica_statuses[to_string(ReplicaType::Worker)] = ReplicaStatus{};
  }
  c.update.status.ready_workers = 0;  // none trains any more
  expire_after_ttl(c.plan, c.job, c.update.status, now);
}

bool launcher_finished(const kube::Object& launcher) {
  for (const auto& cond : child(child(launcher, "status"), "conditions")) {
    const auto type = member<std::string>(cond, "type").value_or("");
    if ((type == "Complete" || type == "Failed") && member<std::string>(cond, "status") == "True") {
      return true;
    }
  }
  return false;
}

// Steps 7-12 for a job that is not finished.
void plan_active(PlanContext& c, std::chrono::system_clock::time_point now) {
  const std::string now_s = kube::format_time(now);
  if (!c.update.status.start_time && !c.job.suspended()) c.update.status.start_time = now_s;
  const auto& launcher = c.observed.launcher_job;
  if (launcher && !c.check_ours(*launcher, "Job")) return;
  if (!launcher || !launcher_finished(*launcher)) {
    if (!detail::ensure_service(c) || !detail::ensure_config_map(c) || !detail::ensure_secret(c) ||
        !detail::ensure_network_policy(c)) {
      return;
    }
    if (!c.job.suspended()) {
      if (!detail::ensure_pod_group(c) || !detail::ensure_workers(c)) return;
      if (!launcher) detail::ensure_launcher(c);
    }
  }
  if (launcher) detail::sync_launcher_suspension(c, *launcher);
  if (c.job.suspended()) detail::clean_up_workers(c);
  update_job_status(c.update, c.job, launcher ? &*launcher : nullptr, c.observed.launcher_pods,
                    detail::controlled_workers(c), now);
  for (const auto& name : c.update.restart_pods) {
    for (const auto& p : c.observed.worker_pods) {
      if (kube::name_of(p) != name) continue;
      c.add(Action::Verb::Delete, kube::resources::kPods,
            {{"metadata", {{"name", name}, {"uid", kube::uid_of(p)}}}}, "worker pod");
    }
  }
}

// Step 5: the Created condition, once.
void plan_created(PlanContext& c, const std::string& now_s) {
  if (!c.update.status.conditions.empty()) return;
  const std::string msg = "MPIJob " + c.job.ns() + "/" + c.job.name() + " is created.";
  set_condition(c.update.status, "Created", "True", kReasonCreated, msg, now_s);
  c.update.events.push_back({"Normal", kReasonCreated, msg});
  c.update.counters.push_back(Counter::JobsCreated);
}

}  // namespace

std::string resource_exists_message(const std::string& name, const std::string& kind) {
  return "Resource \"" + name + "\" of Kind \"" + kind +
         "\" already exists and is not managed by MPIJob";
}

Plan plan(const kube::Object& obj, const Observed& observed, const BuildOptions& opts,
          KeyGenerator& keys, std::chrono::system_clock::time_point now) {
  Plan p;
  MPIJob job(obj);
  if (auto m = job.managed_by(); m && *m != kManagedByMpiOperator) {
    p.skip = true;
    p.skip_reason = "managed by " + *m;
    return p;
  }
  if (job.being_deleted()) {
    p.skip = true;
    p.skip_reason = "being deleted";
    return p;
  }
  // The admin profile fills what the job leaves unset, before the built-in defaults.
  const ProfileChoice profile = choose_profile(job, observed.profiles);
  BuildOptions build = opts;
  if (profile.pinned) {
    apply_profile(child(*profile.pinned, "values"), job);
    build.network = profile_network(child(*profile.pinned, "values"), opts.network);
  }
  apply_defaults(job);
  StatusUpdate u;
  u.status = job.status();
  const JobStatus before = u.status;
  u.status.profile = profile.pinned;
  PlanContext c{job, observed, build, keys, p, u};
  const std::string now_s = kube::format_time(now);

  if (!profile.error_reason.empty() && !is_finished(u.status)) {
    mark_failed(u, profile.error_reason, profile.error_message, now_s);
  } else if (auto errs = all_errors(job, build); !errs.empty() && !is_finished(u.status)) {
    std::string msg = "Found validation errors: " + format_errors(errs);
    if (msg.size() > 1024) msg.resize(1024);
    mark_failed(u, kReasonValidationError, msg, now_s);
  } else if (is_finished(u.status) && u.status.completion_time) {
    plan_finished(c, now);
  } else {
    plan_created(c, now_s);
    plan_active(c, now);
  }
  if (!(u.status == before)) p.status = status_to_json(u.status);
  p.events.insert(p.events.begin(), u.events.begin(), u.events.end());
  p.counters = u.counters;
  return p;
}

}  // namespace mpijob
