#include "mpijob/launch_mode.h"

#include <stdexcept>

namespace mpijob {
namespace {

bool is_set(const kube::Object& obj, const char* key) {
  return obj.is_object() && obj.contains(key) && !obj[key].is_null();
}

bool a_container_sets_run_as_user(const kube::Object& spec) {
  for (const char* list : {"containers", "initContainers"}) {
    for (const auto& c : child(spec, list)) {
      if (is_set(child(c, "securityContext"), "runAsUser")) return true;
    }
  }
  return false;
}

void restrict_container(kube::Object& container) {
  kube::Object& sc = container["securityContext"];
  if (!is_set(sc, "allowPrivilegeEscalation")) sc["allowPrivilegeEscalation"] = false;
  kube::Object& caps = sc["capabilities"];
  if (!is_set(caps, "drop")) caps["drop"] = kube::Object::array({"ALL"});
}

}  // namespace

LaunchMode launch_mode(const MPIJob& job) {
  const std::string value = job.annotation(kAnnotationLaunch);
  if (value.empty() || value == "ssh") return LaunchMode::Ssh;
  if (value == "agent") return LaunchMode::Agent;
  throw std::invalid_argument(std::string(kAnnotationLaunch) + ": \"" + value +
                              "\" is neither \"ssh\" nor \"agent\"");
}

void apply_restricted_defaults(kube::Object& pod_spec) {
  const bool user_chosen = a_container_sets_run_as_user(pod_spec);
  kube::Object& sc = pod_spec["securityContext"];
  if (!is_set(sc, "runAsNonRoot")) sc["runAsNonRoot"] = true;
  if (!user_chosen && !is_set(sc, "runAsUser")) {
    sc["runAsUser"] = kAgentDefaultUid;
    if (!is_set(sc, "runAsGroup")) sc["runAsGroup"] = kAgentDefaultUid;
  }
  if (!is_set(sc, "seccompProfile")) sc["seccompProfile"] = {{"type", "RuntimeDefault"}};
  for (const char* list : {"containers", "initContainers"}) {
    if (!is_set(pod_spec, list)) continue;
    for (auto& c : pod_spec[list]) restrict_container(c);
  }
}

}  // namespace mpijob
