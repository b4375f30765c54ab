// Helpers shared by the worker pod and launcher Job builders (not part of the public API).
#pragma once

#include <string>

#include "mpijob/builders.h"

namespace mpijob::detail {

// A copy of the replica's pod template with metadata.labels merged with the default labels
// (operator-name, job-name, job-role) and spec/containers present.
kube::Object labelled_template(const MPIJob& job, ReplicaType type, const std::string& role);

kube::Object& main_container(kube::Object& pod_template);
void append_env(kube::Object& container, const std::string& name, const std::string& value);
// hostname, subdomain, and ClusterFirstWithHostNet with hostNetwork.
void set_host_identity(kube::Object& spec, const MPIJob& job, const std::string& hostname);
// restartPolicy from the replica spec (ExitCode maps to Never).
void set_restart_policy(kube::Object& spec, const MPIJob& job, ReplicaType type);
// The ssh-auth volume and its mount on the first container at sshAuthMountPath.
void setup_ssh(kube::Object& spec, const MPIJob& job);
// The job secret's volume (only kJobSecretKey of the <job>-ssh Secret), its read-only mount at
// kJobSecretMountPath and KOROVOD_JOB_SECRET_FILE on the first container, unless that container
// sets KOROVOD_JOB_SECRET_FILE or KOROVOD_JOB_SECRET itself.
void setup_job_secret(kube::Object& spec, const MPIJob& job);

}  // namespace mpijob::detail
