// korovod extension: a NetworkPolicy (networking.k8s.io/v1) per MPIJob, owned by the job, that
// lets into the job's pods only the job's own pods (and the metrics scraper, where configured).
// Together with the job secret (types.h, kJobSecretKey) it keeps other pods of the cluster away
// from the job's rendezvous store, its ranks' sockets and its sshd.
//
// Which jobs get one: the operator's --network-policy flag (Helm value networkPolicy.mode):
//   off     none, whatever the annotation says (the operator does not even watch NetworkPolicies,
//           so it needs no RBAC for them)
//   opt-in  jobs annotated korovod.io/network-policy: "true"
//   on      every job, unless annotated korovod.io/network-policy: "false"
// The policy selects the pods by the labels the operator puts on them (operator-name, job-name);
// it is enforced only by a CNI plugin that implements NetworkPolicy (Calico, Cilium, ...), and
// never for hostNetwork pods.
#pragma once

#include <map>
#include <string>

#include "mpijob/types.h"

namespace mpijob {

inline constexpr const char* kAnnotationNetworkPolicy = "korovod.io/network-policy";
inline constexpr const char* kNetworkPolicySuffix = "-netpol";

extern const kube::Resource kNetworkPolicies;  // networking.k8s.io/v1 networkpolicies

enum class NetworkPolicyMode { Off, OptIn, On };

struct NetworkPolicyOptions {
  NetworkPolicyMode mode = NetworkPolicyMode::Off;
  // The metrics scraper let in as well: pods with these labels in this namespace ("" = the job's
  // own namespace). Neither set: no scraper rule.
  std::string scraper_namespace;
  std::map<std::string, std::string> scraper_labels;
};

// "off" | "opt-in" | "on"; throws std::invalid_argument otherwise.
NetworkPolicyMode parse_network_policy_mode(const std::string& name);
// "k=v,k2=v2" as matchLabels; throws std::invalid_argument on a malformed pair.
std::map<std::string, std::string> parse_match_labels(const std::string& text);

std::string network_policy_name(const MPIJob& job);  // <job>-netpol
// Whether the job gets a policy under these options. Throws std::invalid_argument when the
// annotation is neither "true" nor "false" (a validation error of the job).
bool wants_network_policy(const MPIJob& job, const NetworkPolicyOptions& options);
kube::Object build_network_policy(const MPIJob& job, const NetworkPolicyOptions& options);

}  // namespace mpijob
