#include "mpijob/network_policy.h"

#include <stdexcept>

#include "mpijob/builders.h"

namespace mpijob {

const kube::Resource kNetworkPolicies{"networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", true};

NetworkPolicyMode parse_network_policy_mode(const std::string& name) {
  if (name == "off") return NetworkPolicyMode::Off;
  if (name == "opt-in") return NetworkPolicyMode::OptIn;
  if (name == "on") return NetworkPolicyMode::On;
  throw std::invalid_argument("network policy mode \"" + name + "\": expected off, opt-in or on");
}

std::map<std::string, std::string> parse_match_labels(const std::string& text) {
  std::map<std::string, std::string> out;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find(',', at);
    if (end == std::string::npos) end = text.size();
    const std::string pair = text.substr(at, end - at);
    const size_t eq = pair.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw std::invalid_argument("label \"" + pair + "\": expected key=value");
    }
    out[pair.substr(0, eq)] = pair.substr(eq + 1);
    at = end + 1;
  }
  return out;
}

std::string network_policy_name(const MPIJob& job) { return job.name() + kNetworkPolicySuffix; }

bool wants_network_policy(const MPIJob& job, const NetworkPolicyOptions& options) {
  const std::string value = job.annotation(kAnnotationNetworkPolicy);
  if (!value.empty() && value != "true" && value != "false") {
    throw std::invalid_argument(std::string(kAnnotationNetworkPolicy) + ": \"" + value +
                                "\" is neither \"true\" nor \"false\"");
  }
  switch (options.mode) {
    case NetworkPolicyMode::Off:
      return false;
    case NetworkPolicyMode::OptIn:
      return value == "true";
    case NetworkPolicyMode::On:
      return value != "false";
  }
  return false;
}

kube::Object build_network_policy(const MPIJob& job, const NetworkPolicyOptions& options) {
  // The labels every pod of the job carries (labelled_template): the same selector picks the
  // pods the policy guards and the pods it lets in.
  const kube::Object job_pods = {{"matchLabels", {{kLabelOperatorName, kOperatorName}, {kLabelJobName, job.name()}}}};
  kube::Object ingress = kube::Object::array({{{"from", kube::Object::array({{{"podSelector", job_pods}}})}}});
  if (!options.scraper_namespace.empty() || !options.scraper_labels.empty()) {
    kube::Object peer = {{"podSelector", {{"matchLabels", kube::Object::object()}}}};
    for (const auto& [k, v] : options.scraper_labels) peer["podSelector"]["matchLabels"][k] = v;
    if (!options.scraper_namespace.empty()) {
      peer["namespaceSelector"] = {{"matchLabels", {{"kubernetes.io/metadata.name", options.scraper_namespace}}}};
    }
    ingress.push_back({{"from", kube::Object::array({peer})}});
  }
  kube::Object meta = object_meta(job, network_policy_name(job));
  meta["labels"] = {{"app", job.name()}};
  return {{"apiVersion", "networking.k8s.io/v1"},
          {"kind", "NetworkPolicy"},
          {"metadata", meta},
          {"spec", {{"podSelector", job_pods}, {"policyTypes", {"Ingress"}}, {"ingress", ingress}}}};
}

}  // namespace mpijob
