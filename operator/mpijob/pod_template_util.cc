#include "mpijob/pod_template_util.h"

#include "mpijob/defaults.h"

namespace mpijob {

// ---- names ----

std::string worker_name(const MPIJob& job, int32_t index) {
  return job.name() + kWorkerSuffix + "-" + std::to_string(index);
}
std::string launcher_name(const MPIJob& job) { return job.name() + kLauncherSuffix; }
std::string config_map_name(const MPIJob& job) { return job.name() + kConfigSuffix; }
std::string ssh_secret_name(const MPIJob& job) { return job.name() + kSshSuffix; }

std::string host_fqdn(const MPIJob& job, const std::string& pod, const BuildOptions& opts) {
  std::string fqdn = pod + "." + job.name() + "." + job.ns() + ".svc";
  if (!opts.cluster_domain.empty()) fqdn += "." + opts.cluster_domain;
  return fqdn;
}

std::optional<int32_t> worker_index(const MPIJob& job, const std::string& pod_name) {
  const std::string prefix = job.name() + kWorkerSuffix + "-";
  if (pod_name.rfind(prefix, 0) != 0) return std::nullopt;
  const std::string digits = pod_name.substr(prefix.size());
  if (digits.empty() || digits.size() > 9 ||
      digits.find_first_not_of("0123456789") != std::string::npos ||
      (digits.size() > 1 && digits[0] == '0')) {
    return std::nullopt;
  }
  return std::stoi(digits);
}

// ---- shared pieces ----

kube::Object owner_reference(const MPIJob& job) {
  return {{"apiVersion", kApiVersion}, {"kind", kKind},          {"name", job.name()},
          {"uid", job.uid()},          {"controller", true},     {"blockOwnerDeletion", true}};
}

kube::Object object_meta(const MPIJob& job, const std::string& name) {
  return {{"name", name},
          {"namespace", job.ns()},
          {"ownerReferences", kube::Object::array({owner_reference(job)})}};
}

kube::Object ssh_auth_volume(const MPIJob& job) {
  kube::Object secret = {
      {"secretName", ssh_secret_name(job)},
      {"items", kube::Object::array({{{"key", "ssh-privatekey"}, {"path", "id_rsa"}},
                                     {{"key", "ssh-publickey"}, {"path", "id_rsa.pub"}},
                                     {{"key", "ssh-publickey"}, {"path", "authorized_keys"}}})}};
  // sshd refuses a private key readable by others; other mount paths belong to non-root users
  // whose images relax StrictModes, so the reference leaves the mode unset there.
  if (job.ssh_auth_mount_path() == kRootSshPath) secret["defaultMode"] = 0600;
  return {{"name", kSshAuthVolume}, {"secret", secret}};
}

namespace detail {

kube::Object labelled_template(const MPIJob& job, ReplicaType type, const std::string& role) {
  kube::Object t = job.pod_template(type);
  auto& labels = t["metadata"]["labels"];
  if (!labels.is_object()) labels = kube::Object::object();
  labels[kLabelOperatorName] = kOperatorName;
  labels[kLabelJobName] = job.name();
  labels[kLabelJobRole] = role;
  auto& containers = t["spec"]["containers"];
  if (!containers.is_array() || containers.empty()) {
    throw std::invalid_argument(std::string(to_string(type)) + " template has no containers");
  }
  return t;
}

kube::Object& main_container(kube::Object& pod_template) {
  return pod_template["spec"]["containers"][0];
}

void append_env(kube::Object& container, const std::string& name, const std::string& value) {
  kube::Object var = {{"name", name}};
  if (!value.empty()) var["value"] = value;  // Go omits empty values; match the API's form
  container["env"].push_back(var);
}

void set_host_identity(kube::Object& spec, const MPIJob& job, const std::string& hostname) {
  spec["hostname"] = hostname;
  spec["subdomain"] = job.name();
  if (member<bool>(spec, "hostNetwork").value_or(false)) {
    spec["dnsPolicy"] = "ClusterFirstWithHostNet";
  }
}

void set_restart_policy(kube::Object& spec, const MPIJob& job, ReplicaType type) {
  std::string policy = job.restart_policy(type);
  spec["restartPolicy"] = policy == "ExitCode" ? "Never" : policy;
}

void setup_ssh(kube::Object& spec, const MPIJob& job) {
  spec["volumes"].push_back(ssh_auth_volume(job));
  spec["containers"][0]["volumeMounts"].push_back(
      {{"name", kSshAuthVolume}, {"mountPath", job.ssh_auth_mount_path()}});
}

void setup_job_secret(kube::Object& spec, const MPIJob& job) {
  kube::Object& container = spec["containers"][0];
  for (const auto& var : child(container, "env")) {
    const std::string name = member<std::string>(var, "name").value_or("");
    if (name == kJobSecretFileEnv || name == "KOROVOD_JOB_SECRET") return;  // the user's choice
  }
  // 0444: readable by the container's user whoever that is (the pi example runs as uid 1000);
  // no other pod mounts it.
  kube::Object secret = {{"secretName", ssh_secret_name(job)},
                         {"items", kube::Object::array({{{"key", kJobSecretKey}, {"path", kJobSecretFileName}}})},
                         {"defaultMode", 0444}};
  spec["volumes"].push_back({{"name", kJobSecretVolume}, {"secret", secret}});
  container["volumeMounts"].push_back(
      {{"name", kJobSecretVolume}, {"mountPath", kJobSecretMountPath}, {"readOnly", true}});
  append_env(container, kJobSecretFileEnv, std::string(kJobSecretMountPath) + "/" + kJobSecretFileName);
}

}  // namespace detail
}  // namespace mpijob
