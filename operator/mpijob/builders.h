// Pure builders: (defaulted MPIJob, options, observed pods) -> the objects the job should own,
// with the names, labels, env vars, volumes and mounts of Kubeflow's mpi-operator v0.8.
// No I/O; the reconciler compares these with what exists and writes the difference.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "mpijob/network_policy.h"
#include "mpijob/network_profile.h"
#include "mpijob/ssh_keys.h"
#include "mpijob/types.h"

namespace mpijob {

struct BuildOptions {
  // --cluster-domain. Hostfile names are <pod>.<job>.<ns>.svc[.<domain>] (the reference's
  // format); the workers' DNS search path always gets a domain: this one or cluster.local.
  std::string cluster_domain;
  // --gang-scheduling: "" (off), "volcano", or a scheduler-plugins scheduler name.
  std::string gang_scheduler;
  // --network-profile and friends: the default for jobs without korovod.io/ annotations.
  NetworkProfile network;
  // --network-policy and the scraper it lets in (network_policy.h).
  NetworkPolicyOptions network_policy;
};

// PriorityClass name -> value, for PodGroup minResources (nullopt when unknown).
using PriorityLookup = std::function<std::optional<int32_t>(const std::string&)>;

// ---- names ----
std::string worker_name(const MPIJob& job, int32_t index);
std::string launcher_name(const MPIJob& job);
std::string config_map_name(const MPIJob& job);
std::string ssh_secret_name(const MPIJob& job);
// "<pod>.<job>.<ns>.svc", plus ".<cluster_domain>" when one is configured.
std::string host_fqdn(const MPIJob& job, const std::string& pod, const BuildOptions& opts);
// The worker index encoded in a pod name "<job>-worker-<i>"; nullopt for other names.
std::optional<int32_t> worker_index(const MPIJob& job, const std::string& pod_name);

// ---- shared pieces ----
kube::Object owner_reference(const MPIJob& job);  // controller=true, blockOwnerDeletion=true
kube::Object object_meta(const MPIJob& job, const std::string& name);  // name, ns, ownerRefs
kube::Object ssh_auth_volume(const MPIJob& job);

// ---- objects ----
kube::Object build_service(const MPIJob& job);
std::string hostfile(const MPIJob& job, const BuildOptions& opts);
std::string discover_hosts(const MPIJob& job, const std::vector<kube::Object>& worker_pods,
                           const BuildOptions& opts);
kube::Object build_config_map(const MPIJob& job, const std::vector<kube::Object>& worker_pods,
                              const BuildOptions& opts);
kube::Object build_ssh_secret(const MPIJob& job, const SshKeyPair& keys);
kube::Object build_worker_pod(const MPIJob& job, int32_t index, const BuildOptions& opts);
kube::Object build_launcher_pod_template(const MPIJob& job, const BuildOptions& opts);
kube::Object build_launcher_job(const MPIJob& job, const BuildOptions& opts);
// True when the launcher template sets restartPolicy itself (Warning SetPodTemplateRestartPolicy).
bool launcher_template_sets_restart_policy(const MPIJob& job);

// ---- gang scheduling ----
bool is_volcano(const BuildOptions& opts);
kube::Resource pod_group_resource(const BuildOptions& opts);  // volcano or scheduler-plugins
kube::Object build_pod_group(const MPIJob& job, const BuildOptions& opts,
                             const PriorityLookup& priority);
// schedulerName plus the PodGroup annotation (volcano) or label (scheduler-plugins).
void decorate_for_gang_scheduling(const MPIJob& job, const BuildOptions& opts,
                                  kube::Object& pod_template);

}  // namespace mpijob
