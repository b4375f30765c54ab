// Worker pods <job>-worker-<i> (the reference's newWorker), plus korovod's network profile and
// launch mode (launch_mode.h).
#include "mpijob/launch_mode.h"
#include "mpijob/pod_template_util.h"

namespace mpijob {
namespace {

// The DNS search path makes "<pod>" resolve inside the job; korovod honours --cluster-domain.
void add_dns_search(kube::Object& spec, const MPIJob& job, const BuildOptions& opts) {
  const std::string domain = opts.cluster_domain.empty() ? "cluster.local" : opts.cluster_domain;
  auto& searches = spec["dnsConfig"]["searches"];
  searches.push_back(job.name() + "." + job.ns() + ".svc." + domain);
}

// A worker whose container says neither command nor args runs the image's sshd, or in agent
// mode korovod's agent.
void default_command(kube::Object& container, LaunchMode mode) {
  const auto& command = child(container, "command");
  const auto& args = child(container, "args");
  const bool no_command = !command.is_array() || command.empty();
  const bool no_args = !args.is_array() || args.empty();
  if (!no_command || !no_args) return;
  if (mode == LaunchMode::Agent) {
    container["command"] = {kAgentServe[0], kAgentServe[1]};
  } else {
    container["command"] = {"/usr/sbin/sshd", "-De"};
  }
}

}  // namespace

kube::Object build_worker_pod(const MPIJob& job, int32_t index, const BuildOptions& opts) {
  const std::string name = worker_name(job, index);
  kube::Object t = detail::labelled_template(job, ReplicaType::Worker, "worker");
  // With runLauncherAsWorker the launcher is rank host 0, so worker i is replica i+1.
  const int32_t replica_index = job.run_launcher_as_worker() ? index + 1 : index;
  t["metadata"]["labels"][kLabelReplicaIndex] = std::to_string(replica_index);

  auto& spec = t["spec"];
  detail::set_host_identity(spec, job, name);
  add_dns_search(spec, job, opts);
  detail::set_restart_policy(spec, job, ReplicaType::Worker);
  const LaunchMode mode = launch_mode(job);
  auto& container = detail::main_container(t);
  default_command(container, mode);
  detail::append_env(container, "K_MPI_JOB_ROLE", "worker");
  if (mode == LaunchMode::Ssh) detail::setup_ssh(spec, job);
  detail::setup_job_secret(spec, job);
  if (mode == LaunchMode::Agent) apply_restricted_defaults(spec);
  apply_network_profile(resolve_network_profile(job, opts.network), job.mpi_implementation(),
                        /*runs_ranks=*/true, container);
  if (!opts.gang_scheduler.empty()) decorate_for_gang_scheduling(job, opts, t);

  kube::Object meta = object_meta(job, name);
  meta["labels"] = t["metadata"]["labels"];
  if (t["metadata"].contains("annotations")) meta["annotations"] = t["metadata"]["annotations"];
  return {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", meta}, {"spec", spec}};
}

}  // namespace mpijob
