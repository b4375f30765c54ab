// The job's Service, ConfigMap (hostfile, discover_hosts.sh) and SSH Secret (with korovod's job
// secret as a third key: one object holds all of the job's key material).
#include "mpijob/builders.h"
#include "mpijob/membership.h"

namespace mpijob {
namespace {

kube::Object app_labelled_meta(const MPIJob& job, const std::string& name) {
  kube::Object meta = object_meta(job, name);
  meta["labels"] = {{"app", job.name()}};
  return meta;
}

std::string slots_line(const MPIJob& job, const std::string& fqdn) {
  const std::string slots = std::to_string(job.slots());
  if (job.mpi_implementation() == MpiImplementation::OpenMPI) {
    return fqdn + " slots=" + slots + "\n";
  }
  return fqdn + ":" + slots + "\n";  // Intel MPI and MPICH
}

}  // namespace

kube::Object build_service(const MPIJob& job) {
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", app_labelled_meta(job, job.name())},
          {"spec",
           {{"clusterIP", "None"},
            {"selector", {{kLabelOperatorName, kOperatorName}, {kLabelJobName, job.name()}}},
            {"publishNotReadyAddresses", job.run_launcher_as_worker()}}}};
}

std::string hostfile(const MPIJob& job, const BuildOptions& opts) {
  std::string out;
  if (job.run_launcher_as_worker()) out += slots_line(job, host_fqdn(job, launcher_name(job), opts));
  for (int32_t i = 0; i < job.replicas(ReplicaType::Worker); ++i) {
    out += slots_line(job, host_fqdn(job, worker_name(job, i), opts));
  }
  return out;
}

// Horovod's discovery format, "host:slots" (the slots of the MPIJob win over the driver's
// default): mpi-operator writes the host alone.
std::string discover_hosts(const MPIJob& job, const std::vector<kube::Object>& worker_pods,
                           const BuildOptions& opts) {
  const std::string slots = ":" + std::to_string(job.slots()) + "\n";
  std::string out = "#!/bin/sh\n";
  if (job.run_launcher_as_worker()) {
    out += "echo " + host_fqdn(job, launcher_name(job), opts) + slots;
  }
  for (const auto& name : listed_workers(job, worker_pods)) {
    out += "echo " + host_fqdn(job, name, opts) + slots;
  }
  return out;
}

kube::Object build_config_map(const MPIJob& job, const std::vector<kube::Object>& worker_pods,
                              const BuildOptions& opts) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", app_labelled_meta(job, config_map_name(job))},
          {"data",
           {{kHostfileName, hostfile(job, opts)},
            {kDiscoverHostsName, discover_hosts(job, worker_pods, opts)}}}};
}

kube::Object build_ssh_secret(const MPIJob& job, const SshKeyPair& keys) {
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"metadata", app_labelled_meta(job, ssh_secret_name(job))},
          {"type", "kubernetes.io/ssh-auth"},
          {"data",
           {{"ssh-privatekey", base64_encode(keys.private_key_pem)},
            {"ssh-publickey", base64_encode(keys.authorized_key)},
            {kJobSecretKey, base64_encode(keys.job_secret)}}}};
}

}  // namespace mpijob
