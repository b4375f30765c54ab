#include "controller/manager.h"

#include <iostream>
#include <thread>

#include "controller/namespaced_cache.h"
#include "controller/owner_mapping.h"
#include "controller/reconcile_failure.h"
#include "controller/recorder.h"
#include "controller/verified_status_client.h"
#include "kube/http_server.h"
#include "kube/mutex.h"
#include "kube/object_meta.h"
#include "kube/rate_limiter.h"
#include "mpijob/builders.h"
#include "mpijob/ssh_keys.h"
#include "mpijob/types.h"

namespace controller {
namespace {

std::unique_ptr<kube::ItemRateLimiter> queue_limiter(const ManagerOptions& o, kube::Clock& clock) {
  std::vector<std::unique_ptr<kube::ItemRateLimiter>> parts;
  parts.push_back(std::make_unique<kube::ExponentialBackoff>(std::chrono::milliseconds(5),
                                                             std::chrono::seconds(1000)));
  parts.push_back(std::make_unique<kube::BucketRateLimiter>(o.queue_qps, o.queue_burst, clock));
  return std::make_unique<kube::MaxOf>(std::move(parts));
}

}  // namespace

std::vector<kube::Resource> watched_resources(const mpijob::ReconcilerOptions& options) {
  std::vector<kube::Resource> r = {mpijob::kMPIJobs,          kube::resources::kConfigMaps,
                                   kube::resources::kSecrets, kube::resources::kServices,
                                   kube::resources::kJobs,    kube::resources::kPods,
                                   kube::resources::kPriorityClasses};
  if (!options.build.gang_scheduler.empty()) {
    r.push_back(mpijob::pod_group_resource(options.build));
  }
  if (options.build.network_policy.mode != mpijob::NetworkPolicyMode::Off) {
    r.push_back(mpijob::kNetworkPolicies);
  }
  return r;
}

Manager::Manager(kube::Client& client, ManagerOptions options, kube::Clock& clock)
    : client_(client), options_(std::move(options)), clock_(clock),
      queue_(clock, queue_limiter(options_, clock)) {
  if (!options_.log) {
    own_log_ = std::make_unique<Logger>(std::cerr, LogFormat::Text, LogLevel::Warning, clock_);
  }
  log_ = options_.log ? options_.log : own_log_.get();
  if (!options_.metrics) own_metrics_ = std::make_unique<OperatorMetrics>();
  metrics_ = options_.metrics ? options_.metrics : own_metrics_.get();
  if (!options_.recorder) {
    own_recorder_ = std::make_unique<EventRecorder>(client_, *metrics_, *log_, clock_,
                                                    options_.event_host);
  }
  if (!options_.keys) own_keys_ = std::make_unique<mpijob::OpenSslKeyGenerator>();
  metrics_->set_queue_depth([this] { return queue_.len(); });

  auto cache = std::make_unique<NamespacedCache>();
  std::vector<std::string> namespaces = options_.namespaces;
  if (namespaces.empty()) namespaces.push_back("");
  for (const auto& r : watched_resources(options_.reconciler)) {
    if (!r.namespaced) {
      add_informer(r, "");
      cache->add(r, "", informers_.back()->store());
      continue;
    }
    for (const auto& ns : namespaces) {
      add_informer(r, ns);
      cache->add(r, ns, informers_.back()->store());
    }
  }
  cache_ = std::move(cache);
  // A status write whose answer was lost may have landed: see verified_status_client.h.
  reconciler_client_ = std::make_unique<VerifiedStatusClient>(client_, clock_);
  mpijob::Recorder& recorder = options_.recorder ? *options_.recorder : *own_recorder_;
  reconciler_ = std::make_unique<mpijob::Reconciler>(
      *reconciler_client_, *cache_, options_.keys ? *options_.keys : *own_keys_, recorder,
      clock_, options_.reconciler);
  failures_ = std::make_unique<ReconcileFailures>(queue_, *log_, *metrics_, recorder);
  if (options_.leader_election) {
    leader_ = std::make_unique<LeaderGate>(client_, *options_.leader_election, *log_, clock_);
  }
}

Manager::~Manager() {
  stop_probes();  // their checks read the state below
  queue_.shut_down();
  for (auto& inf : informers_) inf->stop();
}

void Manager::add_informer(const kube::Resource& r, const std::string& ns) {
  kube::InformerOptions io;
  io.watcher.ns = ns;
  const std::string what = r.resource + (ns.empty() ? "" : " in " + ns);
  io.watcher.on_error = [this, what](const std::string& e) {
    log_->warning("watch failed; retrying", {{"resource", what}, {"error", e}});
  };
  auto inf = std::make_unique<kube::Informer>(client_, r, io, clock_);
  if (r == mpijob::kMPIJobs) {
    inf->on_add([this](const kube::ObjectEvent& e) { queue_.add(std::string(e.key())); });
    inf->on_update([this](const kube::ObjectEvent& old_obj, const kube::ObjectEvent& new_obj) {
      if (old_obj.resource_version() == new_obj.resource_version()) return;
      queue_.add(std::string(new_obj.key()));
    });
    inf->on_delete([this](const kube::ObjectEvent& e) {
      metrics_->remove_job_info(std::string(e.ns()), std::string(e.name()));
    });
  } else if (r.namespaced) {
    const bool is_pod = r == kube::resources::kPods;
    inf->on_add([this, is_pod](const kube::ObjectEvent& e) { enqueue_owner(e, is_pod); });
    inf->on_update([this, is_pod](const kube::ObjectEvent& old_obj, const kube::ObjectEvent& new_obj) {
      if (old_obj.resource_version() == new_obj.resource_version()) return;
      enqueue_owner(new_obj, is_pod);
    });
    inf->on_delete([this, is_pod](const kube::ObjectEvent& e) { enqueue_owner(e, is_pod); });
  }
  informers_.push_back(std::move(inf));
}

void Manager::enqueue_owner(const kube::ObjectEvent& obj, bool is_pod) {
  JobLookup jobs;
  if (is_pod) {
    jobs = [this](const std::string& ns, const std::string& name) {
      return cache_->get(kube::resources::kJobs, ns, name);
    };
  }
  auto key = owning_mpijob_key(obj, jobs);
  if (!key) return;
  auto [ns, name] = kube::split_key(*key);
  if (!cache_->get(mpijob::kMPIJobs, ns, name)) return;  // owner gone or not watched
  queue_.add(*key);
}

void Manager::serve_probes() {
  const int health = options_.health_port, monitoring = options_.metrics_port;
  if (health > 0) {
    health_server_ = std::make_unique<kube::HttpServer>("", static_cast<uint16_t>(health));
    health_server_->add_healthz_check("leader-election", [this] { return alive(); });
    health_server_->add_readyz_check("informers", [this] { return ready(); });
    if (monitoring == health) health_server_->set_metrics([this] { return metrics_->render(); });
    health_server_->start();
  }
  if (monitoring > 0 && monitoring != health) {
    metrics_server_ = std::make_unique<kube::HttpServer>("", static_cast<uint16_t>(monitoring));
    metrics_server_->set_metrics([this] { return metrics_->render(); });
    metrics_server_->start();
  }
  log_->info("serving", {{"health_port", std::to_string(health)},
                         {"monitoring_port", std::to_string(monitoring)}});
}

void Manager::stop_probes() {
  if (metrics_server_) metrics_server_->stop();
  if (health_server_) health_server_->stop();
}

kube::CheckResult Manager::alive() const {
  if (leader_ && leader_->lost()) return kube::CheckResult::failed("leader lease lost");
  return kube::CheckResult::healthy();
}

kube::CheckResult Manager::ready() const {
  if (leader_ && !leader_->is_leader()) return kube::CheckResult::healthy();  // a standby
  return synced_ ? kube::CheckResult::healthy()
                 : kube::CheckResult::failed("caches not synced yet");
}

bool Manager::caches_synced() const {
  for (const auto& inf : informers_) {
    if (!inf->has_synced()) return false;
  }
  return true;
}

void Manager::run(std::stop_token stop) {
  // The caches fill before the lease is won, as controller-runtime's Manager does: a standby
  // that takes over starts reconciling without first listing every watched resource. Their
  // events queue MPIJob keys, which workers take only once this replica leads.
  log_->info("starting informers", {{"count", std::to_string(informers_.size())}});
  for (auto& inf : informers_) inf->start();
  if (leader_ && !leader_->wait_until_leading(stop)) {
    for (auto& inf : informers_) inf->stop();
    return;
  }
  metrics_->set_leader(true);
  std::exception_ptr failure;
  try {
    run_controller(stop);
  } catch (const std::exception& e) {
    log_->error("controller failed", {{"error", e.what()}});
    failure = std::current_exception();
  }
  if (leader_) leader_->release();
  metrics_->set_leader(false);
  stop_probes();
  if (failure) std::rethrow_exception(failure);
}

void Manager::run_controller(std::stop_token stop) {
  const auto deadline = clock_.steady_now() + options_.cache_sync_timeout;
  for (auto& inf : informers_) {
    while (!inf->wait_for_sync(std::chrono::milliseconds(200))) {
      if (stop.stop_requested()) {
        for (auto& i : informers_) i->stop();
        return;
      }
      if (clock_.steady_now() > deadline) {
        for (auto& i : informers_) i->stop();
        throw std::runtime_error("timed out waiting for the " + inf->resource().resource +
                                 " cache to sync");
      }
    }
  }
  log_->info("caches synced; starting workers",
             {{"threadiness", std::to_string(options_.threadiness)}});
  std::vector<std::thread> workers;
  for (int i = 0; i < std::max(1, options_.threadiness); ++i) workers.emplace_back([this] { worker(); });
  std::unique_ptr<ProgressPoller> progress;
  std::jthread progress_thread;
  if (options_.launcher_logs && options_.progress.interval.count() > 0) {
    progress = std::make_unique<ProgressPoller>(client_, *cache_, *options_.launcher_logs, *metrics_, *log_, clock_,
                                                options_.namespaces, options_.progress);
    progress_thread = std::jthread([&progress](std::stop_token st) { progress->run(st); });
  }
  synced_ = true;
  {
    kube::Mutex mu;
    std::condition_variable_any cv;
    kube::MutexLock lock(mu);
    cv.wait(lock, stop, [] { return false; });
  }
  log_->info("stopping: finishing in-flight reconciles");
  synced_ = false;
  if (progress_thread.joinable()) {
    progress_thread.request_stop();
    progress_thread.join();
  }
  queue_.shut_down();  // get() returns nullopt; keys being reconciled finish first
  for (auto& w : workers) w.join();
  for (auto& inf : informers_) inf->stop();
  log_->info("controller stopped", {{"reconciles", std::to_string(reconciles_)}});
}

void Manager::worker() {
  while (auto key = queue_.get()) {
    process(*key);
    queue_.done(*key);
  }
}

void Manager::process(const std::string& key) {
  auto [ns, name] = kube::split_key(key);
  const auto start = clock_.steady_now();
  try {
    mpijob::Result r = reconciler_->reconcile(ns, name);
    metrics_->observe_reconcile(clock_.steady_now() - start);
    ++reconciles_;
    queue_.forget(key);
    if (r.requeue_after) queue_.add_after(key, *r.requeue_after);
    if (auto launcher = cache_->get(kube::resources::kJobs, ns, name + mpijob::kLauncherSuffix)) {
      metrics_->set_job_info(ns, name, kube::name_of(*launcher));
    }
    if (log_->enabled(LogLevel::Debug)) {
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          clock_.steady_now() - start).count();
      log_->debug("reconciled", {{"mpijob", key}, {"duration_ms", std::to_string(ms)}});
    }
  } catch (...) {  // not only std::exception: whatever was thrown, the key is not lost
    metrics_->observe_reconcile(clock_.steady_now() - start);
    ++reconciles_;
    const auto job = cache_->get(mpijob::kMPIJobs, ns, name);
    failures_->handle(key, std::current_exception(), job ? &*job : nullptr);
  }
}

}  // namespace controller
