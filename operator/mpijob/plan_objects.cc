// plan() step 9-11: the objects an unfinished job owns.
#include <algorithm>

#include "kube/client.h"
#include "kube/object_meta.h"
#include "mpijob/membership.h"
#include "mpijob/plan_steps.h"

namespace mpijob::detail {
namespace {

std::string phase(const kube::Object& pod) {
  return member<std::string>(child(pod, "status"), "phase").value_or("");
}

bool pod_ready(const kube::Object& pod) {
  for (const auto& c : child(child(pod, "status"), "conditions")) {
    if (member<std::string>(c, "type") == "Ready") return member<std::string>(c, "status") == "True";
  }
  return false;
}

kube::Object delete_target(const kube::Object& obj) {
  kube::Object meta = {{"name", kube::name_of(obj)}};
  if (!kube::uid_of(obj).empty()) meta["uid"] = kube::uid_of(obj);
  return {{"metadata", meta}};
}

const kube::Object* find_pod(const std::vector<kube::Object>& pods, const std::string& name) {
  for (const auto& p : pods) {
    if (kube::name_of(p) == name) return &p;
  }
  return nullptr;
}

}  // namespace

bool PlanContext::check_ours(const kube::Object& obj, const std::string& kind) {
  if (is_controlled_by(obj, job.uid())) return true;
  const std::string msg = resource_exists_message(kube::name_of(obj), kind);
  plan.events.push_back({"Warning", "ErrResourceExists", msg});
  plan.error = msg;
  return false;
}

void PlanContext::add(Action::Verb verb, const kube::Resource& r, kube::Object obj,
                      const std::string& what) {
  plan.actions.push_back({verb, r, std::move(obj), what, std::nullopt});
}

std::vector<kube::Object> controlled_workers(const PlanContext& c) {
  std::vector<kube::Object> out;
  for (const auto& p : c.observed.worker_pods) {
    if (is_controlled_by(p, c.job.uid())) out.push_back(p);
  }
  return out;
}

bool workers_ready(const PlanContext& c) {
  for (int32_t i = 0; i < c.job.replicas(ReplicaType::Worker); ++i) {
    const kube::Object* p = find_pod(c.observed.worker_pods, worker_name(c.job, i));
    if (p == nullptr || !is_controlled_by(*p, c.job.uid()) || !pod_ready(*p)) return false;
  }
  return true;
}

bool ensure_service(PlanContext& c) {
  const kube::Object want = build_service(c.job);
  if (!c.observed.service) {
    c.add(Action::Verb::Create, kube::resources::kServices, want, "service");
    return true;
  }
  if (!c.check_ours(*c.observed.service, "Service")) return false;
  const auto& have = child(*c.observed.service, "spec");
  if (child(have, "selector") != want["spec"]["selector"] ||
      member<bool>(have, "publishNotReadyAddresses").value_or(false) !=
          want["spec"]["publishNotReadyAddresses"].get<bool>()) {
    kube::Object updated = *c.observed.service;
    updated["spec"]["selector"] = want["spec"]["selector"];
    updated["spec"]["publishNotReadyAddresses"] = want["spec"]["publishNotReadyAddresses"];
    c.add(Action::Verb::Update, kube::resources::kServices, updated, "service");
  }
  return true;
}

bool ensure_config_map(PlanContext& c) {
  const kube::Object want = build_config_map(c.job, controlled_workers(c), c.opts);
  if (!c.observed.config_map) {
    c.add(Action::Verb::Create, kube::resources::kConfigMaps, want, "config map");
    return true;
  }
  if (!c.check_ours(*c.observed.config_map, "ConfigMap")) return false;
  const auto& have = child(*c.observed.config_map, "data");
  if (have != want["data"]) {
    kube::Object updated = *c.observed.config_map;
    updated["data"] = want["data"];
    c.add(Action::Verb::Update, kube::resources::kConfigMaps, updated, "config map");
    if (is_elastic(c.job)) {
      c.plan.actions.back().event_on_success = membership_event(
          workers_in_script(member<std::string>(have, kDiscoverHostsName).value_or("")),
          workers_in_script(want["data"][kDiscoverHostsName].get<std::string>()));
    }
  }
  return true;
}

bool ensure_secret(PlanContext& c) {
  if (!c.observed.secret) {
    c.add(Action::Verb::Create, kube::resources::kSecrets,
          build_ssh_secret(c.job, c.keys.generate()), "ssh secret");
    return true;
  }
  if (!c.check_ours(*c.observed.secret, "Secret")) return false;
  // Key material is never rotated: only a Secret with a different set of keys is rewritten. One
  // an older operator wrote (the SSH keys alone) gets the job secret added and keeps its keys, so
  // the job's sshd and mpirun go on trusting each other.
  std::vector<std::string> have;
  for (const auto& [k, v] : child(*c.observed.secret, "data").items()) have.push_back(k);
  const std::vector<std::string> ssh_only = {"ssh-privatekey", "ssh-publickey"};
  const std::vector<std::string> all = {kJobSecretKey, "ssh-privatekey", "ssh-publickey"};  // sorted, as JSON keeps them
  if (have == all) return true;
  kube::Object updated = *c.observed.secret;
  const SshKeyPair keys = c.keys.generate();
  if (have == ssh_only) {
    updated["data"][kJobSecretKey] = base64_encode(keys.job_secret);
  } else {
    updated["data"] = build_ssh_secret(c.job, keys)["data"];
  }
  c.add(Action::Verb::Update, kube::resources::kSecrets, updated, "ssh secret");
  return true;
}

bool ensure_network_policy(PlanContext& c) {
  const auto& have = c.observed.network_policy;
  if (!wants_network_policy(c.job, c.opts.network_policy)) {
    if (have && is_controlled_by(*have, c.job.uid()) && !kube::has_deletion_timestamp(*have)) {
      c.add(Action::Verb::Delete, kNetworkPolicies, delete_target(*have), "network policy");
    }
    return true;
  }
  const kube::Object want = build_network_policy(c.job, c.opts.network_policy);
  if (!have) {
    c.add(Action::Verb::Create, kNetworkPolicies, want, "network policy");
    return true;
  }
  if (!c.check_ours(*have, "NetworkPolicy")) return false;
  if (child(*have, "spec") != want["spec"]) {
    kube::Object updated = *have;
    updated["spec"] = want["spec"];
    c.add(Action::Verb::Update, kNetworkPolicies, updated, "network policy");
  }
  return true;
}

bool ensure_pod_group(PlanContext& c) {
  if (c.opts.gang_scheduler.empty()) return true;
  const kube::Resource r = pod_group_resource(c.opts);
  const kube::Object want = build_pod_group(c.job, c.opts, c.observed.priority);
  if (!c.observed.pod_group) {
    c.add(Action::Verb::Create, r, want, "pod group");
    return true;
  }
  if (!c.check_ours(*c.observed.pod_group, "PodGroup")) return false;
  if (child(*c.observed.pod_group, "spec") != want["spec"]) {
    kube::Object updated = *c.observed.pod_group;
    updated["spec"] = want["spec"];
    c.add(Action::Verb::Update, r, updated, "pod group");
  }
  return true;
}

bool ensure_workers(PlanContext& c) {
  const int32_t replicas = c.job.replicas(ReplicaType::Worker);
  for (const auto& p : controlled_workers(c)) {  // scale down
    auto index = worker_index(c.job, kube::name_of(p));
    if ((!index || *index >= replicas) && !kube::has_deletion_timestamp(p)) {
      c.add(Action::Verb::Delete, kube::resources::kPods, delete_target(p), "worker pod");
    }
  }
  for (int32_t i = 0; i < replicas; ++i) {
    const kube::Object* p = find_pod(c.observed.worker_pods, worker_name(c.job, i));
    if (p == nullptr) {
      c.add(Action::Verb::Create, kube::resources::kPods, build_worker_pod(c.job, i, c.opts),
            "worker pod");
    } else if (!c.check_ours(*p, "Pod")) {
      return false;
    }
  }
  return true;
}

void ensure_launcher(PlanContext& c) {
  if (c.job.launcher_creation_policy() == "WaitForWorkersReady" && !workers_ready(c)) return;
  c.add(Action::Verb::Create, kube::resources::kJobs, build_launcher_job(c.job, c.opts),
        "launcher job");
  if (launcher_template_sets_restart_policy(c.job)) {
    c.plan.events.push_back({"Warning", "SetPodTemplateRestartPolicy",
                             "Restart policy in pod template will be overwritten by restart "
                             "policy in replica spec"});
  }
}

void sync_launcher_suspension(PlanContext& c, const kube::Object& launcher) {
  const bool job_suspended = member<bool>(child(launcher, "spec"), "suspend").value_or(false);
  if (job_suspended == c.job.suspended()) return;
  kube::Object updated = launcher;
  if (!c.job.suspended()) {
    // Scheduling directives of a suspended Job may change only while it has never started.
    if (child(launcher, "status").contains("startTime")) {
      kube::Object cleared = launcher;
      cleared["status"].erase("startTime");
      c.add(Action::Verb::UpdateStatus, kube::resources::kJobs, cleared, "launcher job");
      updated["status"].erase("startTime");
    }
    const kube::Object fresh = build_launcher_pod_template(c.job, c.opts);
    auto& tmpl = updated["spec"]["template"];
    for (const char* key : {"labels", "annotations"}) {
      for (const auto& [k, v] : child(fresh["metadata"], key).items()) tmpl["metadata"][key][k] = v;
    }
    for (const char* key : {"nodeSelector", "tolerations", "schedulingGates"}) {
      if (fresh["spec"].contains(key)) {
        tmpl["spec"][key] = fresh["spec"][key];
      } else {
        tmpl["spec"].erase(key);
      }
    }
  }
  updated["spec"]["suspend"] = c.job.suspended();
  c.add(Action::Verb::Update, kube::resources::kJobs, updated, "launcher job");
}

void clean_up_workers(PlanContext& c) {
  const bool keep_finished = c.job.clean_pod_policy() == "Running";
  for (const auto& p : controlled_workers(c)) {
    if (kube::has_deletion_timestamp(p)) continue;
    const std::string ph = phase(p);
    if (keep_finished && ph != "Running" && ph != "Pending") continue;
    c.add(Action::Verb::Delete, kube::resources::kPods, delete_target(p), "worker pod");
  }
  if (!c.opts.gang_scheduler.empty() && c.observed.pod_group &&
      is_controlled_by(*c.observed.pod_group, c.job.uid())) {
    c.add(Action::Verb::Delete, pod_group_resource(c.opts), delete_target(*c.observed.pod_group),
          "pod group");
  }
}

}  // namespace mpijob::detail
