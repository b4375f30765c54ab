#include "controller/reconcile_failure.h"

#include "kube/api_error.h"

namespace controller {

const char* to_string(FailureClass c) {
  return c == FailureClass::Permanent ? "permanent" : "retryable";
}

Failure classify(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const kube::ApiError& err) {
    return {kube::is_permanent(err) ? FailureClass::Permanent : FailureClass::Retryable,
            kube::describe_reason(err), err.api_message()};
  } catch (const mpijob::ResourceExistsError& err) {
    return {FailureClass::Retryable, "ErrResourceExists", err.what()};
  } catch (const std::exception& err) {
    return {FailureClass::Retryable, "Unclassified", err.what()};
  } catch (...) {
    return {FailureClass::Retryable, "Unclassified", "an exception not derived from std::exception"};
  }
}

FailureClass ReconcileFailures::handle(const std::string& key, std::exception_ptr e,
                                       const kube::Object* job) {
  const Failure f = classify(e);
  if (f.cls == FailureClass::Retryable) {
    metrics_.reconcile_retryable_error();
    log_.error("reconcile failed; requeued with backoff",
               {{"mpijob", key}, {"reason", f.reason}, {"error", f.message},
                {"requeues", std::to_string(queue_.num_requeues(key))}});
    queue_.add_rate_limited(key);
    return f.cls;
  }
  metrics_.reconcile_permanent_error();
  queue_.forget(key);  // no backoff carried into the reconcile the next change brings
  queue_.add_after(key, kPermanentRecheck);
  const std::string what = "reconcile failed permanently; retried when the MPIJob or an object "
                           "it owns changes, or in 5 minutes";
  log_.error(what, {{"mpijob", key}, {"reason", f.reason}, {"error", f.message}});
  // What and why first: the recorder cuts a message at 1024 characters.
  if (job) {
    recorder_.event(*job, {"Warning", kReasonReconcileFailed,
                           what + ": " + f.reason + ": " + f.message});
  }
  return f.cls;
}

}  // namespace controller
