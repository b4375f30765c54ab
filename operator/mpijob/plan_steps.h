// The steps of plan() (internal). Each appends to the Plan being built.
#pragma once

#include "mpijob/plan.h"

namespace mpijob::detail {

struct PlanContext {
  const MPIJob& job;
  const Observed& observed;
  const BuildOptions& opts;
  KeyGenerator& keys;
  Plan& plan;
  StatusUpdate& update;

  // Records ErrResourceExists (event + error) when obj is not controlled by the job.
  // Returns true when obj is ours.
  bool check_ours(const kube::Object& obj, const std::string& kind);
  void add(Action::Verb verb, const kube::Resource& r, kube::Object obj, const std::string& what);
};

// Worker pods the job controls (by controller reference).
std::vector<kube::Object> controlled_workers(const PlanContext& c);
bool workers_ready(const PlanContext& c);

// Step 9: get-or-create/update; each returns false after a conflict (stop the sync).
bool ensure_service(PlanContext& c);
bool ensure_config_map(PlanContext& c);
bool ensure_secret(PlanContext& c);
// The job's NetworkPolicy when it wants one (network_policy.h); deletes ours when it no longer
// does (the annotation removed).
bool ensure_network_policy(PlanContext& c);
bool ensure_pod_group(PlanContext& c);
bool ensure_workers(PlanContext& c);
void ensure_launcher(PlanContext& c);

// Step 10: suspend / resume the launcher Job.
void sync_launcher_suspension(PlanContext& c, const kube::Object& launcher);
// cleanUpWorkerPods: delete worker pods (cleanPodPolicy Running keeps finished ones) and the
// PodGroup.
void clean_up_workers(PlanContext& c);

}  // namespace mpijob::detail
