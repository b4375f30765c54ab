// Pods as docker containers (`korovod run --runtime docker`), the pure part: from a pod, one of
// its containers, the env the pod runtime resolved (pod_env.h) and the mounts of its
// materialized volumes (volumes.h) to the `docker run` command line a kubelet's container
// runtime would amount to. No I/O: docker_container.h runs it.
//
// Kubernetes semantics over the image: `command` replaces the ENTRYPOINT (--entrypoint
// command[0], command[1:] + args after the image), `args` alone replace CMD, neither keeps the
// image's own; $(VAR) references in both are expanded from the container's env. The pod's
// DNS names (pod_dns_names) are network aliases on the job's network, --hostname is the pod's
// hostname; securityContext runAsUser / runAsGroup (container over pod) become --user, fsGroup
// and supplementalGroups --group-add; workingDir -w; resources.limits cpu / memory --cpus /
// --memory (when the daemon can enforce them); imagePullPolicy --pull. Secret, configMap,
// downwardAPI and projected volumes are bound read-only whatever the volumeMount says, as a
// kubelet mounts them.
#pragma once

#include <string>
#include <vector>

#include "local/sandbox/sandbox.h"

namespace local {

// Every container and network of one `korovod run` carries kRunLabel=<run id>: cleanup finds
// them by it, also those a failed start left behind.
inline constexpr const char* kRunLabel = "korovod.run";

struct DockerOptions {
  std::string docker = "docker";  // the CLI, looked up in client_env's PATH
  EnvList client_env;             // the CLI's own environment: PATH, HOME, DOCKER_HOST, ...
  std::string run_id;             // kRunLabel's value
  std::string network;            // the job's user-defined bridge network
  std::string cluster_domain = "cluster.local";
  // What the daemon can enforce (docker info: CPUCfsQuota, MemoryLimit); a limit it cannot is
  // left out rather than failing every container.
  bool cpu_limits = true;
  bool memory_limits = true;
};

// korovod-<run>-<pod>-<container>-<serial>: every (re)start is a new container, so a restarted
// one never waits for its predecessor's --rm removal to free the name.
std::string docker_container_name(const DockerOptions& options, const std::string& pod,
                                  const std::string& container, int serial);

// The names other pods reach this one by: the pod name, its hostname (spec.hostname, else the
// pod name), and with a subdomain <hostname>.<subdomain>.<ns>.svc (the operator's hostfile
// names) and the same with .<cluster domain>.
std::vector<std::string> pod_dns_names(const kube::Object& pod, const std::string& cluster_domain);

// --user from securityContext (the container's over the pod's): "uid" or "uid:gid"; "" when
// runAsUser is unset (the image's USER). runAsGroup alone cannot be given to docker without a
// user and is left out (documented in operator/local/README.md).
std::string docker_user(const kube::Object& pod, const kube::Object& container);
// True unless securityContext sets a non-zero runAsUser (the worker images set no USER).
bool runs_as_root(const kube::Object& pod, const kube::Object& container);

// Kubernetes quantities as docker takes them: cpu "500m" -> "0.5", memory "2Gi" -> bytes.
std::string docker_cpus(const kube::Object& quantity);
std::string docker_memory(const kube::Object& quantity);

struct DockerRunArgs {
  std::vector<std::string> argv;  // docker run ... IMAGE [ARGS]
  std::string env_file;           // the --env-file content ("NAME=value\n" per variable)
};
// `name`: the container's name; `env_file_path`: where the caller writes env_file. A value
// with a newline cannot go in an env file and is passed as -e NAME=value instead.
DockerRunArgs docker_run_args(const kube::Object& pod, const kube::Object& container,
                              const LaunchSpec& launch, const DockerOptions& options,
                              const std::string& name, const std::string& env_file_path);

}  // namespace local
