// The launcher: a batch/v1 Job <job>-launcher (the reference's newLauncherJob and
// newLauncherPodTemplate), plus korovod's network profile and launch mode (launch_mode.h).
#include "mpijob/launch_mode.h"
#include "mpijob/pod_template_util.h"

namespace mpijob {
namespace {

constexpr const char* kConnectionAttempts = "-o ConnectionAttempts=10";

// Env order is pinned by the reference's tests: user env, K_MPI_JOB_ROLE, the implementation's
// vars, the slots var, the NVIDIA vars.
void add_launcher_env(kube::Object& c, const MPIJob& job) {
  detail::append_env(c, "K_MPI_JOB_ROLE", "launcher");
  const std::string hostfile_path = std::string(kConfigMountPath) + "/" + kHostfileName;
  const std::string slots = std::to_string(job.slots());
  switch (job.mpi_implementation()) {
    case MpiImplementation::OpenMPI:
      detail::append_env(c, "OMPI_MCA_orte_keep_fqdn_hostnames", "true");
      detail::append_env(c, "OMPI_MCA_orte_default_hostfile", hostfile_path);
      detail::append_env(c, "OMPI_MCA_plm_rsh_args", kConnectionAttempts);
      detail::append_env(c, "OMPI_MCA_orte_set_default_slots", slots);
      break;
    case MpiImplementation::Intel:
      detail::append_env(c, "I_MPI_HYDRA_HOST_FILE", hostfile_path);
      detail::append_env(c, "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS", kConnectionAttempts);
      detail::append_env(c, "I_MPI_PERHOST", slots);
      break;
    case MpiImplementation::MPICH:
      detail::append_env(c, "HYDRA_HOST_FILE", hostfile_path);
      detail::append_env(c, "HYDRA_LAUNCH_EXTRA_ARGS", kConnectionAttempts);
      break;
  }
  if (launch_mode(job) == LaunchMode::Agent) {
    // mpirun (Open MPI, validation allows no other in this mode) and korovodrun reach the
    // workers' agents instead of their sshd.
    detail::append_env(c, "OMPI_MCA_plm_rsh_agent", kAgentRsh);
    detail::append_env(c, "KOROVOD_RSH_AGENT", kAgentRsh);
  }
  if (!job.run_launcher_as_worker()) {
    // mpirun alone needs no GPU: hide the node's GPUs from a launcher scheduled on a GPU node.
    detail::append_env(c, "NVIDIA_VISIBLE_DEVICES", "");
    detail::append_env(c, "NVIDIA_DRIVER_CAPABILITIES", "");
  }
}

kube::Object config_volume(const MPIJob& job) {
  return {{"name", kConfigVolume},
          {"configMap",
           {{"name", config_map_name(job)},
            {"items", kube::Object::array({{{"key", kHostfileName}, {"path", kHostfileName}, {"mode", 0444}},
                                           {{"key", kDiscoverHostsName},
                                            {"path", kDiscoverHostsName},
                                            {"mode", 0555}}})}}}};
}

}  // namespace

bool launcher_template_sets_restart_policy(const MPIJob& job) {
  const auto& spec = child(job.pod_template(ReplicaType::Launcher), "spec");
  return !member<std::string>(spec, "restartPolicy").value_or("").empty();
}

kube::Object build_launcher_pod_template(const MPIJob& job, const BuildOptions& opts) {
  kube::Object t = detail::labelled_template(job, ReplicaType::Launcher, "launcher");
  if (job.run_launcher_as_worker()) t["metadata"]["labels"][kLabelReplicaIndex] = "0";
  if (!opts.gang_scheduler.empty()) decorate_for_gang_scheduling(job, opts, t);
  auto& spec = t["spec"];
  detail::set_host_identity(spec, job, launcher_name(job));
  auto& container = detail::main_container(t);
  add_launcher_env(container, job);
  apply_network_profile(resolve_network_profile(job, opts.network), job.mpi_implementation(),
                        /*runs_ranks=*/job.run_launcher_as_worker(), container);
  const LaunchMode mode = launch_mode(job);
  if (mode == LaunchMode::Ssh) detail::setup_ssh(spec, job);
  detail::setup_job_secret(spec, job);
  detail::set_restart_policy(spec, job, ReplicaType::Launcher);
  spec["volumes"].push_back(config_volume(job));
  container["volumeMounts"].push_back({{"name", kConfigVolume}, {"mountPath", kConfigMountPath}});
  if (mode == LaunchMode::Agent) apply_restricted_defaults(spec);

  kube::Object meta = {{"labels", t["metadata"]["labels"]}};
  if (t["metadata"].contains("annotations")) meta["annotations"] = t["metadata"]["annotations"];
  return {{"metadata", meta}, {"spec", spec}};
}

kube::Object build_launcher_job(const MPIJob& job, const BuildOptions& opts) {
  kube::Object meta = object_meta(job, launcher_name(job));
  meta["labels"] = {{"app", job.name()}};
  kube::Object spec = {{"template", build_launcher_pod_template(job, opts)},
                       {"podReplacementPolicy", "Failed"}};
  // No ttlSecondsAfterFinished of its own (mpi-operator copies the MPIJob's): korovod deletes
  // the whole MPIJob at its TTL, the Job with it. A Job TTL could delete the finished launcher
  // before the operator recorded its outcome; the next reconcile, seeing no launcher, would
  // start the job again (seen under ASan with a 1 s TTL: the success lost, the job re-run).
  if (auto ads = job.active_deadline_seconds()) spec["activeDeadlineSeconds"] = *ads;
  if (auto bl = job.backoff_limit()) spec["backoffLimit"] = *bl;
  if (job.suspended()) spec["suspend"] = true;
  return {{"apiVersion", "batch/v1"}, {"kind", "Job"}, {"metadata", meta}, {"spec", spec}};
}

}  // namespace mpijob
