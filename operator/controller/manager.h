// Manager: the MPIJob controller's composition root, as controller-runtime's Manager, shared by
// the korovod-operator binary (against a RestClient) and local mode (against a MemoryClient).
//
//   Manager m(client, options, clock);
//   m.serve_probes();                                          // the binary only
//   std::jthread t([&](std::stop_token st) { m.run(st); });   // blocks until stop
//
// serve_probes() serves /healthz, /readyz and /metrics. run() first starts informers for MPIJob,
// ConfigMap, Secret, Service, Job, Pod, PriorityClass (and PodGroup with gang scheduling) in every
// watched namespace. With leader election (the binary), it then campaigns for the Lease
// (leader_gate.h) and reconciles only once this replica leads: a standby keeps its caches warm,
// as controller-runtime's Manager does, so a takeover does not wait for a full list. Once leading
// (at once without leader election) it waits until the caches have synced, then runs
// `threadiness` workers that take MPIJob keys from a rate-limited work queue and call
// mpijob::Reconciler::reconcile. Keys queued while standing by are reconciled then. Events on owned objects enqueue their MPIJob
// (Pod -> Job -> MPIJob for launcher pods). A failed reconcile is handled by ReconcileFailures: a
// retryable failure is requeued with per-key exponential backoff (5ms..1000s, max'ed with a token
// bucket), a permanent one (the API server refused the request: Invalid, Forbidden, ...) is not
// requeued with backoff: it waits for the next change, or 5 minutes (reconcile_failure.h).
// Result::requeue_after is honoured. On stop: no new keys are handed out, in-flight reconciles
// finish, informers stop, the lease is handed back, run() returns.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "controller/leader_gate.h"
#include "controller/log.h"
#include "controller/metrics.h"
#include "controller/progress_poller.h"
#include "controller/reconcile_failure.h"
#include "kube/client.h"
#include "kube/clock.h"
#include "kube/informer.h"
#include "kube/workqueue.h"
#include "mpijob/reconciler.h"

namespace kube {
class HttpServer;
struct CheckResult;
}  // namespace kube

namespace controller {

struct ManagerOptions {
  std::vector<std::string> namespaces;  // empty = all namespaces
  int threadiness = 2;
  double queue_qps = 10;  // --controller-queue-rate-limit
  int queue_burst = 100;  // --controller-queue-burst
  mpijob::ReconcilerOptions reconciler;  // cluster domain, gang scheduler, network, concurrency
  std::chrono::seconds cache_sync_timeout{120};  // run() throws if caches do not sync in time
  // Optional collaborators; the Manager makes its own when null.
  Logger* log = nullptr;              // default: warnings and errors to stderr, text
  OperatorMetrics* metrics = nullptr;
  mpijob::Recorder* recorder = nullptr;    // default: core/v1 Events + metrics
  mpijob::KeyGenerator* keys = nullptr;    // default: OpenSSL ECDSA P-521
  std::string event_host;                  // Event.source.host
  // Campaign for this Lease before reconciling; none: reconcile at once (local mode).
  std::optional<LeaderElectionOptions> leader_election;
  // serve_probes(): /healthz and /readyz on health_port, /metrics on metrics_port (on the same
  // server when the ports are equal); 0 serves nothing on that port.
  int health_port = 0;
  int metrics_port = 0;
  // Training progress into MPIJob.status.progress (progress_poller.h) while leading: the
  // launcher logs to read (null: no progress) and how often.
  LauncherLogs* launcher_logs = nullptr;
  ProgressOptions progress;
};

class Manager {
 public:
  Manager(kube::Client& client, ManagerOptions options, kube::Clock& clock);
  ~Manager();
  Manager(const Manager&) = delete;
  Manager& operator=(const Manager&) = delete;

  // Binds the probe and metrics ports and serves them until run() returns or the Manager is
  // destroyed. Throws std::exception when a port cannot be served.
  void serve_probes();

  // Blocks until stop is requested; see the file comment. With leader election it returns
  // without reconciling when stop comes before the lease, and hands the lease back on the way
  // out. Throws (after logging "controller failed") std::runtime_error if the caches do not sync
  // within cache_sync_timeout.
  void run(std::stop_token stop);

  bool synced() const { return synced_; }      // caches synced and workers running
  bool caches_synced() const;                   // every informer has listed (also on a standby)
  size_t queue_depth() { return queue_.len(); }
  uint64_t reconciles() const { return reconciles_; }
  OperatorMetrics& metrics() { return *metrics_; }

 private:
  void run_controller(std::stop_token stop);
  kube::CheckResult alive() const;
  kube::CheckResult ready() const;
  void stop_probes();
  void add_informer(const kube::Resource& r, const std::string& ns);
  void enqueue_owner(const kube::ObjectEvent& obj, bool is_pod);
  void worker();
  void process(const std::string& key);

  // Constant after construction.
  kube::Client& client_;
  const ManagerOptions options_;
  kube::Clock& clock_;
  std::unique_ptr<Logger> own_log_;
  std::unique_ptr<OperatorMetrics> own_metrics_;
  std::unique_ptr<mpijob::Recorder> own_recorder_;
  std::unique_ptr<mpijob::KeyGenerator> own_keys_;
  Logger* log_;
  OperatorMetrics* metrics_;

  kube::WorkQueue queue_;  // thread-safe
  std::vector<std::unique_ptr<kube::Informer>> informers_;  // set up in the constructor
  std::unique_ptr<mpijob::Cache> cache_;
  std::unique_ptr<kube::Client> reconciler_client_;  // client_ with status writes verified
  std::unique_ptr<mpijob::Reconciler> reconciler_;
  std::unique_ptr<ReconcileFailures> failures_;  // thread-safe
  std::unique_ptr<LeaderGate> leader_;             // with options_.leader_election only
  std::unique_ptr<kube::HttpServer> health_server_, metrics_server_;  // serve_probes()
  std::atomic<bool> synced_{false};
  std::atomic<uint64_t> reconciles_{0};
};

// The resources the Manager watches for these options (for RBAC preflight and docs).
std::vector<kube::Resource> watched_resources(const mpijob::ReconcilerOptions& options);

}  // namespace controller
