// korovod-operator's command line: the reference mpi-operator's flags (single-dash long forms
// such as -kubeConfig and the klog flags the reference's manifests pass are accepted) plus
// korovod's. Parsing is separate from main() so tests can check it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace operator_cmd {

struct Flags {
  std::string kubeconfig;  // --kubeconfig (the KUBECONFIG env var wins, as in the reference)
  std::string master;      // --master: API server URL, overrides the kubeconfig's
  std::vector<std::string> namespaces;  // --namespace a,b ("" = all; default $KUBEFLOW_NAMESPACE)
  int threadiness = 2;
  int monitoring_port = 0;  // 0 = no /metrics
  int health_port = 8080;   // /healthz, /readyz (0 = off)
  std::string gang_scheduling;
  bool leader_elect = true;
  std::string lock_namespace = "mpi-operator";
  double kube_api_qps = 50;
  int kube_api_burst = 100;
  double queue_rate_limit = 10;
  int queue_burst = 100;
  std::string cluster_domain;
  std::string log_format = "text";
  std::string log_level = "info";
  std::string network_profile = "none";
  // korovod: a NetworkPolicy per MPIJob (mpijob/network_policy.h): off, opt-in or on, and the
  // metrics scraper it lets in (namespace; labels "k=v,k2=v2").
  std::string network_policy = "off";
  std::string network_policy_scraper_namespace;
  std::string network_policy_scraper_labels;
  int worker_create_concurrency = 16;
  // korovod: the admins' profiles (mpijob/profile.h), "namespace/name" of their ConfigMap; "" = none.
  std::string profiles_config_map;
  // korovod: seconds between reads of the running jobs' launcher logs for status.progress
  // (controller/progress_poller.h); 0 = no progress.
  double progress_interval = 10;
  bool version = false;
};

// Rewrites single-dash long options ("-kubeConfig=x", "-alsologtostderr", "-v=2") to double-dash.
std::vector<std::string> normalize_args(int argc, const char* const* argv);

struct ParseResult {
  std::optional<Flags> flags;  // nullopt: exit with `exit_code` after printing `output`
  int exit_code = 0;
  std::string output;          // --help text or the error message
};

// getenv is injected for tests (KUBEFLOW_NAMESPACE).
ParseResult parse_flags(int argc, const char* const* argv,
                        const std::optional<std::string>& kubeflow_namespace_env);

}  // namespace operator_cmd
