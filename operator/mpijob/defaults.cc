#include "mpijob/defaults.h"

#include <string>

namespace mpijob {
namespace {

void set_if_absent(kube::Object& j, const char* key, const kube::Object& value) {
  if (!j.contains(key) || j[key].is_null()) j[key] = value;
}

// A quantity such as 8 or "8"; nullopt for anything that is not a plain whole number.
std::optional<int32_t> whole_number(const kube::Object& q) {
  if (q.is_number_integer()) return q.get<int32_t>();
  if (!q.is_string()) return std::nullopt;
  const auto s = q.get<std::string>();
  if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  return std::stoi(s);
}

void default_replica_spec(kube::Object& specs, ReplicaType t, const char* restart_policy,
                          int32_t replicas) {
  auto it = specs.find(to_string(t));
  if (it == specs.end() || !it->is_object()) return;
  auto& spec = *it;
  if (member<std::string>(spec, "restartPolicy").value_or("").empty()) {
    spec["restartPolicy"] = restart_policy;
  }
  set_if_absent(spec, "replicas", replicas);
}

}  // namespace

std::optional<int32_t> worker_gpus(const MPIJob& job) {
  const auto& containers = child(child(job.pod_template(ReplicaType::Worker), "spec"), "containers");
  if (!containers.is_array() || containers.empty()) return std::nullopt;
  const auto& resources = child(containers[0], "resources");
  for (const char* kind : {"limits", "requests"}) {
    const auto& list = child(resources, kind);
    if (list.contains(kGpuResource)) return whole_number(list[kGpuResource]);
  }
  return std::nullopt;
}

void apply_defaults(MPIJob& job) {
  auto& spec = job.json()["spec"];
  if (!spec.is_object()) spec = kube::Object::object();
  auto& run_policy = spec["runPolicy"];
  if (!run_policy.is_object()) run_policy = kube::Object::object();
  set_if_absent(run_policy, "cleanPodPolicy", "Running");
  if (!spec.contains("slotsPerWorker") || spec["slotsPerWorker"].is_null()) {
    auto gpus = worker_gpus(job);
    spec["slotsPerWorker"] = gpus && *gpus > 0 ? *gpus : 1;
  }
  set_if_absent(spec, "runLauncherAsWorker", false);
  if (member<std::string>(spec, "sshAuthMountPath").value_or("").empty()) {
    spec["sshAuthMountPath"] = kRootSshPath;
  }
  if (member<std::string>(spec, "mpiImplementation").value_or("").empty()) {
    spec["mpiImplementation"] = "OpenMPI";
  }
  if (member<std::string>(spec, "launcherCreationPolicy").value_or("").empty()) {
    spec["launcherCreationPolicy"] = "AtStartup";
  }
  if (spec.contains("mpiReplicaSpecs") && spec["mpiReplicaSpecs"].is_object()) {
    auto& specs = spec["mpiReplicaSpecs"];
    default_replica_spec(specs, ReplicaType::Launcher, "OnFailure", 1);
    default_replica_spec(specs, ReplicaType::Worker, "Never", 0);
  }
}

}  // namespace mpijob
