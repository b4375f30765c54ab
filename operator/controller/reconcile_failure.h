// What the controller does with a reconcile that threw: one classification of failures
// (classify) and the one place that acts on it (ReconcileFailures::handle). The split is
// controller-runtime's reconcile.TerminalError:
//
//   Retryable  the same reconcile may succeed later with nothing changed. Requeued with the
//              work queue's per-key backoff (5 ms .. 1000 s), logged at error level with the
//              reason. These are: API errors kube::is_permanent does not name (conflicts, 404,
//              429, 5xx, a ResourceQuota refusal, no answer at all), an object of ours taken by
//              someone else (ResourceExistsError: the user deletes the foreign object, and that
//              deletion does not enqueue the MPIJob, so only a retry notices), and every other
//              exception -- unknown means retried, so no failure is dropped.
//   Permanent  the API server refused a request that the next reconcile would send unchanged
//              (kube::is_permanent: 422 Invalid, 400 BadRequest, 403 Forbidden, 413, ...).
//              Not requeued with backoff, and the key's backoff history is forgotten; logged
//              at error level and recorded as a Warning event (reason ReconcileFailed) on the
//              MPIJob. The key is reconciled again on its next informer event (the MPIJob
//              edited, an object it owns changed, the operator restarted) or after
//              kPermanentRecheck, whichever comes first: what a 403 names (RBAC, an admission
//              policy, a service account) is fixed outside the job, and that fix enqueues
//              nothing. So a refusal costs one reconcile per 5 minutes, not a backoff loop.
//
// An MPIJob that fails korovod's own validation never gets here: the reconciler marks it
// Failed with reason ValidationError and returns normally (mpijob/plan.cc). A permanent API
// refusal does not touch status: the MPIJob's condition types (Created, Running, Restarting,
// Succeeded, Suspended, Failed) have none for "blocked until edited", and Failed is final --
// an edit that fixes the spec could not bring the job back.
#pragma once

#include <chrono>
#include <exception>
#include <string>

#include "controller/log.h"
#include "controller/metrics.h"
#include "kube/client.h"
#include "kube/workqueue.h"
#include "mpijob/reconciler.h"

namespace controller {

enum class FailureClass { Retryable, Permanent };
const char* to_string(FailureClass c);  // "retryable" / "permanent"

struct Failure {
  FailureClass cls = FailureClass::Retryable;
  // The API's reason with code and rejected fields ("Invalid (HTTP 422) on spec.x"),
  // "ErrResourceExists", or "Unclassified" for an exception without an API status.
  std::string reason;
  std::string message;  // the API server's message, or what() of any other exception
};

// The classification; `e` must not be null.
Failure classify(std::exception_ptr e);

inline constexpr const char* kReasonReconcileFailed = "ReconcileFailed";
// When a permanently failed key is reconciled again if nothing enqueued it before.
inline constexpr std::chrono::minutes kPermanentRecheck{5};

class ReconcileFailures {
 public:
  ReconcileFailures(kube::WorkQueue& queue, Logger& log, OperatorMetrics& metrics,
                    mpijob::Recorder& recorder)
      : queue_(queue), log_(log), metrics_(metrics), recorder_(recorder) {}

  // Handles the failed reconcile of `key` (namespace/name) as the file comment says. `job` is
  // the MPIJob from the cache, nullptr once it is gone (then there is nothing to put an event
  // on). Call it before queue.done(key). Returns the class it handled the failure as.
  FailureClass handle(const std::string& key, std::exception_ptr e, const kube::Object* job);

 private:
  // Constant after construction; all thread-safe.
  kube::WorkQueue& queue_;
  Logger& log_;
  OperatorMetrics& metrics_;
  mpijob::Recorder& recorder_;
};

}  // namespace controller
