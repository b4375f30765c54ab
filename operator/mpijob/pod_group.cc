// Gang scheduling: the PodGroup <job> for Volcano or scheduler-plugins (the reference's
// podgroup.go), and the pod decoration that points pods at it.
#include <algorithm>
#include <map>
#include <vector>

#include "mpijob/builders.h"
#include "mpijob/quantity.h"

namespace mpijob {
namespace {

const kube::Resource kVolcanoPodGroups{"scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup",
                                       true};
const kube::Resource kPluginsPodGroups{"scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup",
                                       true};

int32_t min_member(const MPIJob& job) {
  if (const kube::Object* sp = job.scheduling_policy()) {
    if (auto n = member<int32_t>(*sp, "minAvailable")) return *n;
  }
  return job.replicas(ReplicaType::Worker) + 1;
}

std::string policy_string(const MPIJob& job, const char* key) {
  const kube::Object* sp = job.scheduling_policy();
  return sp ? member<std::string>(*sp, key).value_or("") : "";
}

std::string template_priority_class(const MPIJob& job, ReplicaType t) {
  return member<std::string>(child(job.pod_template(t), "spec"), "priorityClassName").value_or("");
}

struct ReplicaShare {
  ReplicaType type;
  int32_t priority;
  int64_t replicas;
};

// Which replica counts go into minResources: when launcher + workers exceed minMember, the
// lower-priority set (workers on a tie) is cut to minMember - 1.
std::vector<ReplicaShare> replica_shares(const MPIJob& job, int32_t min_members,
                                         const PriorityLookup& priority) {
  std::vector<ReplicaShare> shares;
  int64_t total = 0;
  for (ReplicaType t : {ReplicaType::Launcher, ReplicaType::Worker}) {
    if (!job.replica_spec(t)) continue;
    const std::string pc = template_priority_class(job, t);
    const int32_t value = pc.empty() || !priority ? 0 : priority(pc).value_or(0);
    shares.push_back({t, value, job.replicas(t)});
    total += job.replicas(t);
  }
  if (shares.size() == 2 && total > min_members) {
    ReplicaShare& launcher = shares[0];
    ReplicaShare& worker = shares[1];
    ReplicaShare& lower = launcher.priority >= worker.priority ? worker : launcher;
    lower.replicas = std::max(min_members - 1, 0);
  }
  return shares;
}

void add_container_resources(std::map<std::string, Quantity>& sum, const kube::Object& resources,
                             int64_t replicas) {
  std::map<std::string, kube::Object> merged;
  for (const auto& [name, q] : child(resources, "requests").items()) merged[name] = q;
  for (const auto& [name, q] : child(resources, "limits").items()) merged.emplace(name, q);
  for (const auto& [name, q] : merged) sum[name] += Quantity::parse(q) * replicas;
}

std::optional<kube::Object> min_resources(const MPIJob& job, int32_t min_members,
                                          const PriorityLookup& priority) {
  if (const kube::Object* sp = job.scheduling_policy()) {
    if (sp->contains("minResources") && !(*sp)["minResources"].is_null()) {
      return (*sp)["minResources"];
    }
  }
  if (min_members == 0) return std::nullopt;
  std::map<std::string, Quantity> sum;
  for (const auto& share : replica_shares(job, min_members, priority)) {
    for (const auto& c : child(child(job.pod_template(share.type), "spec"), "containers")) {
      add_container_resources(sum, child(c, "resources"), share.replicas);
    }
  }
  kube::Object out = kube::Object::object();
  for (const auto& [name, q] : sum) out[name] = q.to_string();
  return out;
}

kube::Object volcano_spec(const MPIJob& job, int32_t members, const PriorityLookup& priority) {
  kube::Object spec = kube::Object::object();
  if (members != 0) spec["minMember"] = members;
  std::string queue = policy_string(job, "queue");
  if (queue.empty()) queue = job.annotation("scheduling.volcano.sh/queue-name");
  if (!queue.empty()) spec["queue"] = queue;
  std::string pc = policy_string(job, "priorityClass");
  if (pc.empty()) pc = template_priority_class(job, ReplicaType::Launcher);
  if (pc.empty()) pc = template_priority_class(job, ReplicaType::Worker);
  if (!pc.empty()) spec["priorityClassName"] = pc;
  if (auto r = min_resources(job, members, priority)) spec["minResources"] = *r;
  return spec;
}

kube::Object plugins_spec(const MPIJob& job, int32_t members, const PriorityLookup& priority) {
  kube::Object spec = kube::Object::object();
  if (members != 0) spec["minMember"] = members;
  const kube::Object* sp = job.scheduling_policy();
  spec["scheduleTimeoutSeconds"] = sp ? member<int32_t>(*sp, "scheduleTimeoutSeconds").value_or(0) : 0;
  if (auto r = min_resources(job, members, priority); r && !r->empty()) spec["minResources"] = *r;
  return spec;
}

}  // namespace

bool is_volcano(const BuildOptions& opts) { return opts.gang_scheduler == "volcano"; }

kube::Resource pod_group_resource(const BuildOptions& opts) {
  return is_volcano(opts) ? kVolcanoPodGroups : kPluginsPodGroups;
}

kube::Object build_pod_group(const MPIJob& job, const BuildOptions& opts,
                             const PriorityLookup& priority) {
  const int32_t members = min_member(job);
  const kube::Resource r = pod_group_resource(opts);
  return {{"apiVersion", r.api_version()},
          {"kind", "PodGroup"},
          {"metadata", object_meta(job, job.name())},
          {"spec", is_volcano(opts) ? volcano_spec(job, members, priority)
                                    : plugins_spec(job, members, priority)}};
}

void decorate_for_gang_scheduling(const MPIJob& job, const BuildOptions& opts,
                                  kube::Object& pod_template) {
  pod_template["spec"]["schedulerName"] = opts.gang_scheduler;
  if (is_volcano(opts)) {
    pod_template["metadata"]["annotations"]["scheduling.k8s.io/group-name"] = job.name();
  } else {
    pod_template["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] = job.name();
  }
}

}  // namespace mpijob
