#include "cmd/flags.h"

#include <sstream>

#include <CLI/CLI.hpp>

namespace operator_cmd {
namespace {

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, ',')) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

}  // namespace

std::vector<std::string> normalize_args(int argc, const char* const* argv) {
  std::vector<std::string> out;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (i > 0 && a.size() > 2 && a[0] == '-' && a[1] != '-' && std::isalpha(a[1]) &&
        (std::isalpha(a[2]) || a[2] == '-' || a[2] == '_' || a[2] == '=')) {
      a = "-" + a;
    }
    out.push_back(a);
  }
  return out;
}

namespace {

// "k=v,k2=v2" or empty; CLI11's validator convention: "" when valid, else the error.
std::string match_labels_error(const std::string& v) {
  for (size_t at = 0; at < v.size();) {
    size_t end = v.find(',', at);
    if (end == std::string::npos) end = v.size();
    const size_t eq = v.find('=', at);
    if (eq == std::string::npos || eq == at || eq > end) return "expected k=v,k2=v2";
    at = end + 1;
  }
  return "";
}

// The API server, what is watched, and how the controller runs there. `namespaces` is the raw
// comma-separated --namespace.
void add_controller_flags(CLI::App& app, Flags& f, std::string& namespaces) {
  app.add_option("--kubeconfig,--kubeConfig", f.kubeconfig,
                 "Path to a kubeconfig; the KUBECONFIG env var overrides it. Empty: in-cluster "
                 "service account, then ~/.kube/config");
  app.add_option("--master", f.master, "API server URL; overrides the kubeconfig's server");
  app.add_option("--namespace", namespaces,
                 "Namespaces to watch, comma-separated; empty = all namespaces (default: "
                 "$KUBEFLOW_NAMESPACE)");
  app.add_option("--threadiness", f.threadiness, "MPIJobs reconciled in parallel")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--monitoring-port", f.monitoring_port,
                 "Port of the Prometheus /metrics endpoint; 0 turns it off")
      ->capture_default_str()->check(CLI::Range(0, 65535));
  app.add_option("--health-port", f.health_port, "Port of /healthz and /readyz; 0 turns it off")
      ->capture_default_str()->check(CLI::Range(0, 65535));
  app.add_option("--gang-scheduling", f.gang_scheduling,
                 "\"volcano\", or a scheduler-plugins scheduler name; empty = off");
  app.add_flag("--leader-elect", f.leader_elect,
               "Elect a leader through the Lease mpi-operator before reconciling (default true; --leader-elect=false turns it off)")
      ->capture_default_str();
  app.add_option("--lock-namespace", f.lock_namespace, "Namespace of the leader-election Lease")
      ->capture_default_str();
  app.add_option("--kube-api-qps", f.kube_api_qps, "Client-side rate limit on API requests")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--kube-api-burst", f.kube_api_burst, "Burst of the API rate limit")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--controller-queue-rate-limit", f.queue_rate_limit,
                 "Overall requeue rate (per second) of the work queue")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--controller-queue-burst", f.queue_burst, "Burst of the work queue's rate")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--cluster-domain", f.cluster_domain,
                 "Cluster DNS domain appended to host names, e.g. cluster.local");
}

// The operator's log, and what it builds for each MPIJob (network, parallel creates).
void add_log_and_job_flags(CLI::App& app, Flags& f) {
  app.add_option("--log-format", f.log_format, "text (key=value) or json")
      ->capture_default_str()->check(CLI::IsMember({"text", "json"}));
  app.add_option("--log-level", f.log_level, "trace, debug, info, warning or error")
      ->capture_default_str()
      ->check(CLI::IsMember({"trace", "debug", "info", "warning", "warn", "error"}));
  app.add_option("--network-profile", f.network_profile,
                 "Default network profile of MPIJobs without the korovod.io/network-profile "
                 "annotation: none, tcp, roce or infiniband")
      ->capture_default_str()->check(CLI::IsMember({"none", "tcp", "roce", "infiniband"}));
  app.add_option("--network-policy", f.network_policy,
                 "A NetworkPolicy per MPIJob that lets in only the job's own pods: off; opt-in (jobs "
                 "annotated korovod.io/network-policy: \"true\"); on (every job not annotated \"false\")")
      ->capture_default_str()->check(CLI::IsMember({"off", "opt-in", "on"}));
  app.add_option("--network-policy-scraper-namespace", f.network_policy_scraper_namespace,
                 "The metrics scraper's namespace, let into the job's pods as well (empty: the job's own)");
  app.add_option("--network-policy-scraper-labels", f.network_policy_scraper_labels,
                 "The metrics scraper's pod labels, k=v,k2=v2 (empty with an empty namespace: no scraper rule)")
      ->check(match_labels_error);
  app.add_option("--progress-interval", f.progress_interval,
                 "Seconds between reads of each running MPIJob's launcher log for training progress "
                 "(status.progress, docs/progress.md; needs get pods/log); 0: no progress")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--profiles-config-map", f.profiles_config_map,
                 "namespace/name of the ConfigMap with the admins' profiles (korovod.io/profile; "
                 "the Helm chart's profiles value); empty: no profiles")
      ->check([](const std::string& v) -> std::string {
        const auto slash = v.find('/');
        if (v.empty() || (slash != std::string::npos && slash > 0 && slash + 1 < v.size() &&
                          v.find('/', slash + 1) == std::string::npos)) {
          return "";
        }
        return "want namespace/name, got \"" + v + "\"";
      });
  app.add_option("--worker-create-concurrency", f.worker_create_concurrency,
                 "Worker pods of one MPIJob created in parallel")
      ->capture_default_str()->check(CLI::PositiveNumber);
}

// Accepted for compatibility with the reference's manifests; ignored (korovod always logs to
// stderr, at --log-level). The values land in `ignored_bool` and `ignored`.
void add_klog_flags(CLI::App& app, bool& ignored_bool, std::string& ignored) {
  app.add_flag("--alsologtostderr,--logtostderr", ignored_bool, "Ignored (klog compatibility)")
      ->group("Compatibility");
  app.add_option("--v,--stderrthreshold,--log_dir,--log-dir,--vmodule", ignored,
                 "Ignored (klog compatibility)")->group("Compatibility");
}

}  // namespace

ParseResult parse_flags(int argc, const char* const* argv,
                        const std::optional<std::string>& kubeflow_namespace_env) {
  Flags f;
  std::string namespaces = kubeflow_namespace_env.value_or("");
  CLI::App app{"korovod-operator: the MPIJob (kubeflow.org/v2beta1) controller of korovod",
               "korovod-operator"};
  app.get_formatter()->column_width(40);
  add_controller_flags(app, f, namespaces);
  add_log_and_job_flags(app, f);
  app.add_flag("--version", f.version, "Print the version and exit");
  bool ignored_bool = false;
  std::string ignored;
  add_klog_flags(app, ignored_bool, ignored);

  std::vector<std::string> args = normalize_args(argc, argv);
  std::vector<std::string> rev(args.rbegin(), args.rend() - 1);
  ParseResult r;
  try {
    app.parse(rev);
  } catch (const CLI::CallForHelp&) {
    r.output = app.help();
    return r;
  } catch (const CLI::ParseError& e) {
    r.exit_code = 2;
    r.output = std::string("korovod-operator: ") + e.what() + "\nRun with --help for usage.\n";
    return r;
  }
  f.namespaces = split_commas(namespaces);
  r.flags = f;
  return r;
}

}  // namespace operator_cmd
