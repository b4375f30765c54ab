// A minimal batch/v1 Job controller for local mode (a real cluster runs the real one): for
// each unfinished, unsuspended Job with parallelism 1 and completions 1 (what the MPIJob
// launcher is), it creates a pod from the template (generateName "<job>-", labels job-name /
// controller-uid, a controller ownerReference) whenever none is active, counts failed pods
// against spec.backoffLimit (default 6) — and for restartPolicy OnFailure the container restarts
// of its active pods, failing once they reach the limit, as Kubernetes' pastBackoffLimitOnFailure —
// and sets the conditions the real controller sets: Complete (reason CompletionsReached) on a
// succeeded pod, Failed with BackoffLimitExceeded ("Job has reached the specified backoff
// limit") or DeadlineExceeded (activeDeadlineSeconds), deleting active pods on failure.
// Differences: a failed pod is replaced at once (the real one backs off 10 s doubling);
// podFailurePolicy, indexed completion and parallelism > 1 are not implemented.
#pragma once

#include "kube/client.h"
#include "kube/clock.h"

namespace local {

class JobController {
 public:
  JobController(kube::Client& client, kube::Clock& clock) : client_(client), clock_(clock) {}
  // One pass over every Job; call it periodically.
  void sync_all();
  void sync(const kube::Object& job);

 private:
  kube::Object create_pod(const kube::Object& job);
  void finish(kube::Object job, const std::string& type, const std::string& reason,
              const std::string& message, const std::vector<kube::Object>& active);

  kube::Client& client_;
  kube::Clock& clock_;
};

}  // namespace local
