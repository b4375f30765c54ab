#include "cmd/kubectl_verbs.h"

#include <iostream>

#include "cli/commands.h"
#include "kube/config.h"
#include "kube/rest_client.h"
#include "mpijob/types.h"

namespace operator_cmd {
namespace {

void add_connection_flags(CLI::App* cmd, KubectlCommandLine& c, bool all_namespaces) {
  cmd->add_option("--kubeconfig", c.kubeconfig, "kubeconfig file (default: $KUBECONFIG, in-cluster, ~/.kube/config)");
  cmd->add_option("--context", c.context, "kubeconfig context (default: its current-context)");
  cmd->add_option("-n,--namespace", c.ns, "namespace (default: the context's)");
  if (all_namespaces) cmd->add_flag("-A,--all-namespaces", c.all_namespaces, "every namespace");
}

void add_submit(CLI::App& app, KubectlCommandLine& c) {
  c.submit = app.add_subcommand("submit", "Create an MPIJob from a few flags (one rank per GPU, or per worker without "
                                          "GPUs), optionally following it to its end");
  auto* s = c.submit;
  add_connection_flags(s, c, false);
  s->add_option("name", c.request.name, "the MPIJob's name")->required();
  s->add_option("--workers", c.request.workers, "worker pods")->required()->check(CLI::PositiveNumber);
  s->add_option("--image", c.request.image, "the image of the launcher and the workers")->required();
  s->add_option("--gpus-per-worker", c.request.gpus_per_worker, "GPUs per worker (nvidia.com/gpu), one rank each")
      ->check(CLI::NonNegativeNumber);
  s->add_option("--processes-per-worker", c.processes_per_worker, "ranks per worker (default: one per GPU, else 1)");
  s->add_option("--cpu", c.request.cpu, "CPU per worker, requests = limits (e.g. 4, 500m)");
  s->add_option("--memory", c.request.memory, "memory per worker, requests = limits (e.g. 8Gi)");
  s->add_option("--profile", c.request.profile, "an admin profile for what the job leaves unset (korovod.io/profile)");
  s->add_option("--elastic", c.elastic, "MIN:MAX workers: an elastic job run by korovodrun");
  s->add_option("--mpi", c.mpi, "openmpi (default), intel or mpich");
  s->add_flag("-f,--follow", c.follow, "stream the launcher's log and exit with the job's result (Ctrl-C stops "
                                       "following and leaves the job running)");
  s->add_flag("--dry-run{client}", c.dry_run, "print the MPIJob instead of creating it (--dry-run=client)");
  s->add_option("-o,--output", c.output, "with --dry-run: yaml (default) or json; name");
  s->add_option("command", c.request.command, "after --: the training command")->required();
}

void add_readers(CLI::App& app, KubectlCommandLine& c) {
  c.get = app.add_subcommand("get", "List MPIJobs, or describe one: state, workers, conditions, failed workers");
  add_connection_flags(c.get, c, true);
  c.get->add_option("name", c.name, "one MPIJob");
  c.get->add_option("-o,--output", c.output, "yaml, json or name");

  c.logs = app.add_subcommand("logs", "The launcher's log (mpirun's output: every rank's lines)");
  add_connection_flags(c.logs, c, false);
  c.logs->add_option("name", c.job, "the MPIJob")->required();
  c.logs->add_option("--rank", c.rank, "only the lines of this rank")->check(CLI::NonNegativeNumber);
  c.logs->add_flag("-f,--follow", c.follow, "keep streaming as the launcher writes");

  c.remove = app.add_subcommand("delete", "Delete an MPIJob and, with it, its pods");
  add_connection_flags(c.remove, c, false);
  c.remove->add_option("name", c.job, "the MPIJob")->required();

  c.top = app.add_subcommand("top", "MPIJobs that have not finished, with how long they have been running");
  add_connection_flags(c.top, c, true);
}

// The flags of submit into its request.
void complete_request(KubectlCommandLine& c, const std::string& ns) {
  if (!c.dry_run.empty() && c.dry_run != "client") {
    throw std::invalid_argument("--dry-run=" + c.dry_run + ": only --dry-run=client (print, create nothing)");
  }
  c.request.ns = ns;
  c.request.processes_per_worker = c.processes_per_worker;
  if (!c.elastic.empty()) c.request.elastic = cli::parse_elastic(c.elastic);
  c.request.mpi = cli::parse_mpi(c.mpi);
}

int run(KubectlCommandLine& c, kube::RestClient& api, const std::string& ns, const std::atomic<bool>& interrupted) {
  cli::Io io{std::cout, std::cerr};
  cli::RestPodLogs logs(api);
  kube::RealClock clock;
  if (*c.submit) {
    complete_request(c, ns);
    cli::SubmitOptions o{false, cli::parse_output(c.output), c.follow};
    return cli::submit(api, logs, clock, c.request, o, interrupted, io);
  }
  const std::string scope = c.all_namespaces ? "" : ns;
  if (*c.get) return cli::get(api, scope, c.name, cli::parse_output(c.output), io);
  if (*c.logs) return cli::logs(api, logs, ns, c.job, c.rank, c.follow, interrupted, io);
  if (*c.remove) return cli::remove_job(api, ns, c.job, io);
  return cli::top(api, scope, io);
}

// --dry-run=client reaches no API server: the namespace is -n's, else the kubeconfig context's
// when there is one, else left out.
int dry_run(KubectlCommandLine& c) {
  std::string ns = c.ns;
  if (ns.empty()) {
    try {
      ns = kube::load_config(c.kubeconfig, kube::ConfigEnvironment::process(), c.context).namespace_;
    } catch (const kube::ConfigError&) {
    }
  }
  complete_request(c, ns);
  cli::print_dry_run(c.request, cli::parse_output(c.output), std::cout);
  return 0;
}

}  // namespace

void add_kubectl_verbs(CLI::App& app, KubectlCommandLine& c) {
  add_submit(app, c);
  add_readers(app, c);
}

std::optional<int> run_kubectl_verb(KubectlCommandLine& c, const std::atomic<bool>& interrupted) {
  if (!*c.submit && !*c.get && !*c.logs && !*c.remove && !*c.top) return std::nullopt;
  if (*c.submit && !c.dry_run.empty()) return dry_run(c);
  const kube::Config config = kube::load_config(c.kubeconfig, kube::ConfigEnvironment::process(), c.context);
  kube::RestClient api(config);
  return run(c, api, c.ns.empty() ? config.namespace_ : c.ns, interrupted);
}

}  // namespace operator_cmd
