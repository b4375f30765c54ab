// korovod-operator: the MPIJob controller binary. Flags in cmd/flags.h and docs/operator.md.
//
// main() parses flags and wires: kubeconfig -> REST client -> preflight (CRD installed, RBAC
// allows every verb; exit 1 with a message naming what is missing) -> controller::Manager, which
// serves the probes and metrics, elects a leader (Lease) and runs the controller.
// SIGTERM/SIGINT: stop taking work, finish in-flight reconciles, release the Lease, exit 0.
// Losing the Lease is fatal (exit 1), as in the reference: another replica leads now.
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <random>
#include <stop_token>
#include <thread>

#include <fmt/format.h>
#include <unistd.h>

#include "cmd/flags.h"
#include "cmd/shutdown_signals.h"
#include "controller/counting_client.h"
#include "controller/log.h"
#include "controller/manager.h"
#include "controller/metrics.h"
#include "controller/preflight.h"
#include "controller/recorder.h"
#include "kube/config.h"
#include "kube/rest_client.h"
#include "mpijob/ssh_keys.h"

#ifndef KOROVOD_VERSION
#define KOROVOD_VERSION "0.0.0-dev"
#endif

namespace {

using controller::Logger;

std::string hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string uuid4() {
  std::random_device rd;
  std::mt19937_64 gen((static_cast<uint64_t>(rd()) << 32) ^ rd());
  const uint64_t a = gen(), b = gen();
  return fmt::format("{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}", a >> 32, (a >> 16) & 0xffff,
                     a & 0xfff, 0x8000 | ((b >> 48) & 0x3fff), b & 0xffffffffffffULL);
}

// Waits for SIGTERM/SIGINT (blocked in every thread) and requests stop; ends when `done` stops.
void wait_for_signal(std::stop_source stop, std::stop_token done, Logger& log) {
  const sigset_t set = operator_cmd::shutdown_signals();
  const timespec tick{0, 200'000'000};
  while (!done.stop_requested()) {
    const int sig = sigtimedwait(&set, nullptr, &tick);
    if (sig == SIGTERM || sig == SIGINT) {
      log.info("signal received; shutting down", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
      stop.request_stop();
      return;
    }
  }
}

// Takes SIGTERM/SIGINT (blocked in every thread by main) on a thread of its own; the first one
// requests stop on token(). The thread ends with this object.
class SignalWatcher {
 public:
  explicit SignalWatcher(Logger& log)
      : thread_([this, &log](std::stop_token done) { wait_for_signal(stop_, done, log); }) {}
  std::stop_token token() const { return stop_.get_token(); }

 private:
  std::stop_source stop_;
  std::jthread thread_;  // after stop_, which it uses
};

// The reference lets $KUBECONFIG override -kubeConfig.
std::optional<kube::Config> load_cluster_config(const operator_cmd::Flags& flags, Logger& log) {
  auto env = kube::ConfigEnvironment::process();
  const bool env_kubeconfig = env.getenv("KUBECONFIG").has_value();
  kube::Config config;
  try {
    config = kube::load_config(env_kubeconfig ? "" : flags.kubeconfig, env);
  } catch (const std::exception& e) {
    log.error("cannot load the cluster configuration", {{"error", e.what()}});
    return std::nullopt;
  }
  if (!flags.master.empty()) config.server = flags.master;
  return config;
}

// Before the first request: do not load the system CA bundle into every new TLS connection only
// to replace it with the cluster's CA (~20 ms of CPU each; see HttpRuntimeOptions).
// cpprestsdk's pool keeps its default size: watches and probes share it with the workers.
bool prepare_http_runtime(Logger& log) {
  try {
    kube::configure_http_runtime({.threads = 0, .skip_default_verify_paths = true});
  } catch (const std::exception& e) {
    log.error("cannot configure the HTTP runtime", {{"error", e.what()}});
    return false;
  }
  return true;
}

kube::RestClientOptions rest_client_options(const operator_cmd::Flags& flags) {
  kube::RestClientOptions ro;
  ro.qps = flags.kube_api_qps;
  ro.burst = flags.kube_api_burst;
  ro.user_agent = std::string("korovod-operator/") + KOROVOD_VERSION;
  return ro;
}

mpijob::ReconcilerOptions reconciler_options(const operator_cmd::Flags& flags) {
  mpijob::ReconcilerOptions rec;
  rec.build.cluster_domain = flags.cluster_domain;
  rec.build.gang_scheduler = flags.gang_scheduling;
  rec.build.network.kind = mpijob::parse_network_kind(flags.network_profile);
  rec.build.network_policy.mode = mpijob::parse_network_policy_mode(flags.network_policy);
  rec.build.network_policy.scraper_namespace = flags.network_policy_scraper_namespace;
  rec.build.network_policy.scraper_labels = mpijob::parse_match_labels(flags.network_policy_scraper_labels);
  rec.create_concurrency = flags.worker_create_concurrency;
  if (const auto slash = flags.profiles_config_map.find('/'); slash != std::string::npos) {
    rec.profiles_namespace = flags.profiles_config_map.substr(0, slash);
    rec.profiles_name = flags.profiles_config_map.substr(slash + 1);
  }
  return rec;
}

void log_start(const operator_cmd::Flags& flags, const std::string& server, Logger& log) {
  log.info("starting korovod-operator",
           {{"version", KOROVOD_VERSION}, {"server", server},
            {"namespaces", flags.namespaces.empty() ? "(all)" : fmt::format("{}", fmt::join(flags.namespaces, ","))},
            {"threadiness", std::to_string(flags.threadiness)},
            {"leader_elect", flags.leader_elect ? "true" : "false"},
            {"gang_scheduling", flags.gang_scheduling},
            {"network_policy", flags.network_policy}});
}

// Fails fast and clearly on a missing CRD or RBAC gap; false when the operator cannot run.
bool preflight(kube::Client& client, const operator_cmd::Flags& flags,
               const mpijob::ReconcilerOptions& rec, const std::string& server, Logger& log) {
  try {
    controller::check_crds(client, flags.namespaces, rec.build);
    auto perms = controller::needed_permissions(flags.namespaces, rec.build, flags.leader_elect,
                                                flags.lock_namespace, flags.progress_interval > 0);
    for (const auto& p : controller::check_permissions(client, perms)) {
      log.warning("RBAC does not allow an optional verb", {{"permission", p.describe()},
                                                           {"needed_for", p.why}});
    }
  } catch (const controller::PreflightError& e) {
    log.error(e.what());
    return false;
  } catch (const kube::ApiError& e) {
    log.error("cannot reach the API server", {{"server", server}, {"error", e.what()}});
    return false;
  }
  return true;
}

// The launcher logs the progress poller reads: the API server's pods/log (the last lines, at most
// 256 KiB). A log that cannot be read yet (container not started, kubelet away) is nullopt.
class RestLauncherLogs final : public controller::LauncherLogs {
 public:
  RestLauncherLogs(kube::RestClient& rest, controller::OperatorMetrics& metrics) : rest_(rest), metrics_(metrics) {}
  std::optional<std::string> tail(const std::string& ns, const std::string& pod, const std::string& container,
                                  int lines) override {
    metrics_.api_request("get");
    try {
      return rest_.get_text("/api/v1/namespaces/" + ns + "/pods/" + pod + "/log?container=" + container +
                            "&tailLines=" + std::to_string(lines) + "&limitBytes=262144");
    } catch (const kube::ApiError&) {
      return std::nullopt;
    }
  }

 private:
  kube::RestClient& rest_;
  controller::OperatorMetrics& metrics_;
};

controller::ManagerOptions manager_options(const operator_cmd::Flags& flags,
                                           mpijob::ReconcilerOptions rec, Logger& log,
                                           controller::OperatorMetrics& metrics,
                                           mpijob::Recorder& recorder, controller::LauncherLogs& logs) {
  controller::ManagerOptions mo;
  mo.launcher_logs = &logs;
  mo.progress.interval = std::chrono::milliseconds(static_cast<int64_t>(flags.progress_interval * 1000));
  mo.namespaces = flags.namespaces;
  mo.threadiness = flags.threadiness;
  mo.queue_qps = flags.queue_rate_limit;
  mo.queue_burst = flags.queue_burst;
  mo.reconciler = std::move(rec);
  mo.log = &log;
  mo.metrics = &metrics;
  mo.recorder = &recorder;
  mo.event_host = hostname();
  mo.health_port = flags.health_port;
  mo.metrics_port = flags.monitoring_port;
  if (flags.leader_elect) {
    mo.leader_election.emplace();
    mo.leader_election->lease_namespace = flags.lock_namespace;
    mo.leader_election->identity = hostname() + "_" + uuid4();
  }
  return mo;
}

// Serves the probes, then leads (or stands by) and reconciles until SIGTERM/SIGINT.
int serve_until_signal(controller::Manager& manager, Logger& log) {
  try {
    manager.serve_probes();
  } catch (const std::exception& e) {
    log.error("cannot serve probes/metrics", {{"error", e.what()}});
    return 1;
  }
  int code = 0;
  {
    SignalWatcher signals(log);
    try {
      manager.run(signals.token());
    } catch (const std::exception&) {  // run() logged it
      code = 1;
    }
  }
  log.info("exiting", {{"code", std::to_string(code)}});
  return code;
}

int run(const operator_cmd::Flags& flags, Logger& log, kube::RealClock& clock) {
  const std::optional<kube::Config> config = load_cluster_config(flags, log);
  if (!config || !prepare_http_runtime(log)) return 1;
  kube::RestClient rest(*config, rest_client_options(flags), clock);
  controller::OperatorMetrics metrics;
  controller::CountingClient client(rest, metrics);
  const mpijob::ReconcilerOptions rec = reconciler_options(flags);
  log_start(flags, config->server, log);
  if (!preflight(client, flags, rec, config->server, log)) return 1;
  controller::EventRecorder recorder(client, metrics, log, clock, hostname());
  RestLauncherLogs logs(rest, metrics);
  controller::Manager manager(client, manager_options(flags, rec, log, metrics, recorder, logs), clock);
  return serve_until_signal(manager, log);
}

}  // namespace

int main(int argc, char** argv) {
  operator_cmd::block_shutdown_signals();  // before any thread starts

  const char* ns_env = std::getenv("KUBEFLOW_NAMESPACE");
  auto parsed = operator_cmd::parse_flags(argc, argv, ns_env ? std::optional<std::string>(ns_env)
                                                             : std::nullopt);
  if (!parsed.flags) {
    (parsed.exit_code == 0 ? std::cout : std::cerr) << parsed.output;
    return parsed.exit_code;
  }
  const auto& flags = *parsed.flags;
  if (flags.version) {
    std::cout << "korovod-operator " << KOROVOD_VERSION << "\n";
    return 0;
  }
  kube::RealClock clock;
  Logger log(std::cerr, controller::parse_log_format(flags.log_format),
             controller::parse_log_level(flags.log_level), clock);
  try {
    return run(flags, log, clock);
  } catch (const std::exception& e) {
    log.error("fatal", {{"error", e.what()}});
    return 1;
  }
}
