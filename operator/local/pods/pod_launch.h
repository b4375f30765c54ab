// From a pod's container to a LaunchSpec: the command (command + args; with no command the
// args alone, since the image's ENTRYPOINT is not known locally), the environment (the host's
// PATH with extra directories in front, PYTHONPATH when there are Python directories to give,
// HOSTNAME, HOME, what the runtime adds, then the container's env), the working directory (workingDir, else the pod's directory), the mounts
// and the hostname (spec.hostname, else the pod name).
// Also the context file that lets the rsh agent run a command "inside" a running pod.
#pragma once

#include <filesystem>

#include "local/sandbox/sandbox.h"

namespace local {

struct LaunchDefaults {
  std::vector<std::string> path_prepend;  // directories put in front of the host's PATH
  std::string host_path_env;              // the host's PATH
  // PYTHONPATH of every pod when not empty (the build tree's package, as build/bin is on PATH);
  // the host's PYTHONPATH is not passed on, like the rest of the host's environment.
  std::vector<std::string> python_path;
  std::string home = "/root";
  EnvList extra_env;                      // added before the container's own env
};

LaunchSpec container_launch(const kube::Object& pod, const kube::Object& container,
                            const EnvList& container_env, const std::vector<Mount>& mounts,
                            const std::filesystem::path& pod_dir, const LaunchDefaults& defaults);

// A container run from its image (pods as docker containers): command + args as given, empty
// when the image's ENTRYPOINT/CMD run (docker_run.h applies Kubernetes' rules over the image);
// env is defaults.extra_env then the container's env, and nothing of the host's (no PATH, HOME
// or PYTHONPATH: the image has its own); workingDir, else "" (the image's); mounts; hostname.
LaunchSpec image_launch(const kube::Object& pod, const kube::Object& container,
                        const EnvList& container_env, const std::vector<Mount>& mounts,
                        const LaunchDefaults& defaults);

// The directory the build tree keeps its Python package in, <bin_dir>/../python (build/python
// next to build/bin), as a one-entry list when it holds the korovod package; else empty. With it
// on PYTHONPATH, `import korovod.torch` works in local pods as it does in the worker image.
std::vector<std::string> build_tree_python_path(const std::filesystem::path& bin_dir);

// What every pod of a local runtime gets in its environment: KOROVOD_LOCAL_RUN (marks every
// process of the run), KOROVOD_PODS_DIR (for the rsh agent), Open MPI's run-as-root consent
// when running as root, and no cross-memory attach between ranks (pods have their own pid
// namespaces).
EnvList local_pod_env(const std::filesystem::path& work_dir, bool as_root);

// The MPIJob wiring of the default (rsh agent) path: a worker whose command is the operator's
// default `/usr/sbin/sshd -De` just stays up (mpirun reaches it through the agent), and the
// launcher's mpirun gets OMPI_MCA_plm_rsh_agent=<bin_dir>/korovod-rsh. The launcher's PATH also
// starts with <shim_dir>, where `ssh` is a link to korovod-rsh: korovodrun (and anything else
// that runs `ssh HOST COMMAND`, as korovodrun's elastic driver does for every discovered host)
// reaches the worker pods the same way. Pods are recognized by the
// training.kubeflow.org/job-role label.
void wire_for_rsh_agent(const kube::Object& pod, LaunchSpec& launch,
                        const std::filesystem::path& bin_dir,
                        const std::filesystem::path& shim_dir);
bool is_default_sshd(const LaunchSpec& launch);
std::string job_role(const kube::Object& pod);

// <pod_dir>/context.json: the first container's spec without its command, plus isolation.
void write_pod_context(const std::filesystem::path& pod_dir, const LaunchSpec& spec,
                       Isolation isolation, const std::string& bwrap_path);
struct PodContext {
  LaunchSpec spec;
  Isolation isolation = Isolation::Bwrap;
  std::string bwrap_path;
};
PodContext read_pod_context(const std::filesystem::path& pod_dir);

}  // namespace local
