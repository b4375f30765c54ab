// korovod-operator: the MPIJob controller binary. Flags in cmd/flags.h and docs/operator.md.
//
// Startup: flags -> kubeconfig -> probes server -> preflight (CRD installed, RBAC allows every
// verb; exit 1 with a message naming what is missing) -> leader election (Lease) -> Manager.
// SIGTERM/SIGINT: stop taking work, finish in-flight reconciles, release the Lease, exit 0.
// Losing the Lease is fatal (exit 1), as in the reference: another replica leads now.
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <mutex>
#include <cstdlib>
#include <iostream>
#include <random>
#include <stop_token>
#include <thread>

#include <fmt/format.h>
#include <unistd.h>

#include "cmd/flags.h"
#include "controller/counting_client.h"
#include "controller/log.h"
#include "controller/manager.h"
#include "controller/metrics.h"
#include "controller/preflight.h"
#include "controller/recorder.h"
#include "kube/config.h"
#include "kube/http_server.h"
#include "kube/leader_election.h"
#include "kube/mutex.h"
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
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
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

int run(const operator_cmd::Flags& flags, Logger& log, kube::RealClock& clock) {
  // Configuration: the reference lets $KUBECONFIG override -kubeConfig.
  auto env = kube::ConfigEnvironment::process();
  const bool env_kubeconfig = env.getenv("KUBECONFIG").has_value();
  kube::Config config;
  try {
    config = kube::load_config(env_kubeconfig ? "" : flags.kubeconfig, env);
  } catch (const std::exception& e) {
    log.error("cannot load the cluster configuration", {{"error", e.what()}});
    return 1;
  }
  if (!flags.master.empty()) config.server = flags.master;
  // Before the first request: do not load the system CA bundle into every new TLS connection
  // only to replace it with the cluster's CA (~20 ms of CPU each; see HttpRuntimeOptions).
  // cpprestsdk's pool keeps its default size: watches and probes share it with the workers.
  try {
    kube::configure_http_runtime({.threads = 0, .skip_default_verify_paths = true});
  } catch (const std::exception& e) {
    log.error("cannot configure the HTTP runtime", {{"error", e.what()}});
    return 1;
  }
  kube::RestClientOptions ro;
  ro.qps = flags.kube_api_qps;
  ro.burst = flags.kube_api_burst;
  ro.user_agent = std::string("korovod-operator/") + KOROVOD_VERSION;
  kube::RestClient rest(config, ro, clock);
  controller::OperatorMetrics metrics;
  controller::CountingClient client(rest, metrics);

  mpijob::ReconcilerOptions rec;
  rec.build.cluster_domain = flags.cluster_domain;
  rec.build.gang_scheduler = flags.gang_scheduling;
  rec.build.network.kind = mpijob::parse_network_kind(flags.network_profile);
  rec.build.network_policy.mode = mpijob::parse_network_policy_mode(flags.network_policy);
  rec.build.network_policy.scraper_namespace = flags.network_policy_scraper_namespace;
  rec.build.network_policy.scraper_labels = mpijob::parse_match_labels(flags.network_policy_scraper_labels);
  rec.create_concurrency = flags.worker_create_concurrency;

  log.info("starting korovod-operator",
           {{"version", KOROVOD_VERSION}, {"server", config.server},
            {"namespaces", flags.namespaces.empty() ? "(all)" : fmt::format("{}", fmt::join(flags.namespaces, ","))},
            {"threadiness", std::to_string(flags.threadiness)},
            {"leader_elect", flags.leader_elect ? "true" : "false"},
            {"gang_scheduling", flags.gang_scheduling},
            {"network_policy", flags.network_policy}});

  // Preflight: fail fast and clearly on a missing CRD or RBAC gap.
  try {
    controller::check_crds(client, flags.namespaces, rec.build);
    auto perms = controller::needed_permissions(flags.namespaces, rec.build, flags.leader_elect,
                                                flags.lock_namespace);
    for (const auto& p : controller::check_permissions(client, perms)) {
      log.warning("RBAC does not allow an optional verb", {{"permission", p.describe()},
                                                           {"needed_for", p.why}});
    }
  } catch (const controller::PreflightError& e) {
    log.error(e.what());
    return 1;
  } catch (const kube::ApiError& e) {
    log.error("cannot reach the API server", {{"server", config.server}, {"error", e.what()}});
    return 1;
  }

  const std::string identity = hostname() + "_" + uuid4();
  controller::EventRecorder recorder(client, metrics, log, clock, hostname());
  controller::ManagerOptions mo;
  mo.namespaces = flags.namespaces;
  mo.threadiness = flags.threadiness;
  mo.queue_qps = flags.queue_rate_limit;
  mo.queue_burst = flags.queue_burst;
  mo.reconciler = rec;
  mo.log = &log;
  mo.metrics = &metrics;
  mo.recorder = &recorder;
  mo.event_host = hostname();
  controller::Manager manager(client, mo, clock);

  // Leader election on Lease mpi-operator (the reference's 15s / 5s / 3s). Losing the lease
  // while running is fatal: another replica leads now.
  kube::Mutex lead_mu;
  std::condition_variable_any lead_cv;
  bool leading KOROVOD_GUARDED_BY(lead_mu) = false;
  std::atomic<bool> stopping{false};
  kube::LeaderElectionConfig lc;
  lc.lease_namespace = flags.lock_namespace;
  lc.lease_name = "mpi-operator";
  lc.identity = identity;
  lc.lease_duration = std::chrono::seconds(15);
  lc.renew_deadline = std::chrono::seconds(5);
  lc.retry_period = std::chrono::seconds(3);
  lc.release_on_stop = true;
  lc.on_started_leading = [&] {
    log.info("successfully acquired lease", {{"lease", flags.lock_namespace + "/mpi-operator"},
                                             {"identity", identity}});
    kube::MutexLock lock(lead_mu);
    leading = true;
    lead_cv.notify_all();
  };
  lc.on_stopped_leading = [&] {
    if (stopping) return;
    log.error("leader election lost; exiting", {{"identity", identity}});
    std::_Exit(1);
  };
  lc.on_new_leader = [&](const std::string& who) {
    if (who != identity) log.info("new leader elected", {{"leader", who}});
  };
  lc.on_error = [&](const std::string& e) { log.warning("leader election", {{"error", e}}); };
  kube::LeaderElector elector(client, lc, clock);

  // Probes and metrics.
  std::unique_ptr<kube::HttpServer> health, monitoring;
  auto ready = [&]() -> kube::CheckResult {
    if (flags.leader_elect && !elector.is_leader()) return kube::CheckResult::healthy();  // standby
    return manager.synced() ? kube::CheckResult::healthy()
                            : kube::CheckResult::failed("caches not synced yet");
  };
  auto alive = [&]() -> kube::CheckResult {
    kube::MutexLock lock(lead_mu);
    if (flags.leader_elect && leading && !elector.is_leader() && !stopping) {
      return kube::CheckResult::failed("leader lease lost");
    }
    return kube::CheckResult::healthy();
  };
  try {
    if (flags.health_port > 0) {
      health = std::make_unique<kube::HttpServer>("", static_cast<uint16_t>(flags.health_port));
      health->add_healthz_check("leader-election", alive);
      health->add_readyz_check("informers", ready);
      if (flags.monitoring_port == flags.health_port) {
        health->set_metrics([&] { return metrics.render(); });
      }
      health->start();
    }
    if (flags.monitoring_port > 0 && flags.monitoring_port != flags.health_port) {
      monitoring = std::make_unique<kube::HttpServer>(
          "", static_cast<uint16_t>(flags.monitoring_port));
      monitoring->set_metrics([&] { return metrics.render(); });
      monitoring->start();
    }
  } catch (const std::exception& e) {
    log.error("cannot serve probes/metrics", {{"error", e.what()}});
    return 1;
  }
  log.info("serving", {{"health_port", std::to_string(flags.health_port)},
                       {"monitoring_port", std::to_string(flags.monitoring_port)}});

  std::stop_source stop;
  std::stop_source signal_done;
  std::jthread signals(
      [&](std::stop_token) { wait_for_signal(stop, signal_done.get_token(), log); });

  std::jthread election;
  if (flags.leader_elect) {
    log.info("attempting to acquire leader lease",
             {{"lease", flags.lock_namespace + "/mpi-operator"}, {"identity", identity}});
    election = std::jthread([&] { elector.run(); });
    bool led = false;
    {
      kube::MutexLock lock(lead_mu);
      auto token = stop.get_token();
      led = lead_cv.wait(lock, token, [&] { return leading; });
    }
    if (!led) {
      log.info("stopped before becoming leader");
      stopping = true;
      elector.stop();
      election.join();
      signal_done.request_stop();
      return 0;
    }
  }
  metrics.set_leader(true);

  int code = 0;
  try {
    manager.run(stop.get_token());
  } catch (const std::exception& e) {
    log.error("controller failed", {{"error", e.what()}});
    code = 1;
  }
  stop.request_stop();
  stopping = true;
  if (election.joinable()) {
    elector.stop();  // releases the lease
    election.join();
    log.info("released leader lease", {{"identity", identity}});
  }
  metrics.set_leader(false);
  signal_done.request_stop();
  if (monitoring) monitoring->stop();
  if (health) health->stop();
  log.info("exiting", {{"code", std::to_string(code)}});
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  // Signals are taken by one thread with sigtimedwait: block them before any thread starts.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

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
