// The MPIJob reconciler: level-based Reconcile(namespace/name). It reads what exists from a
// Cache, asks plan() (pure) what to write, and writes it through a kube::Client — the only
// place in operator/mpijob that does I/O. Objects of the same name that the MPIJob does not
// control are never touched: the sync records ErrResourceExists and throws.
//
// Errors are exceptions (kube::ApiError as the API server answered it, ResourceExistsError),
// thrown unchanged -- also from the parallel pod creation -- so the caller can classify them
// (controller/reconcile_failure.h): a retryable one is requeued with rate limiting, as the
// reference's worker loop does; a permanent API refusal (422 Invalid, 403 Forbidden, ...)
// waits for the next change of the MPIJob or its objects.
#pragma once

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>

#include "kube/client.h"
#include "kube/clock.h"
#include "mpijob/builders.h"
#include "mpijob/cache.h"
#include "mpijob/plan.h"

namespace mpijob {

// Where events and metric increments go (the operator wires kube's event recorder and metrics).
class Recorder {
 public:
  virtual ~Recorder() = default;
  virtual void event(const kube::Object& mpijob, const Event& e) = 0;
  virtual void count(Counter c) = 0;
};

struct ReconcilerOptions {
  BuildOptions build;
  int create_concurrency = 32;  // worker pods created in parallel (fast fan-out)
  // --profiles-config-map: the ConfigMap holding the admins' profiles (profile.h); empty name:
  // no profiles. Read through the client (not a cache) once per job, at the first sync of a job
  // that names a profile: afterwards the job's pinned copy is used.
  std::string profiles_namespace, profiles_name;
};

struct Result {
  std::optional<std::chrono::seconds> requeue_after;  // e.g. until ttlSecondsAfterFinished
};

class ResourceExistsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Reconciler {
 public:
  Reconciler(kube::Client& client, Cache& cache, KeyGenerator& keys, Recorder& recorder,
             kube::Clock& clock, ReconcilerOptions options);

  Result reconcile(const std::string& ns, const std::string& name);

 private:
  Observed observe(const kube::Object& job);
  std::optional<ProfileCatalog> read_profiles(const kube::Object& job);
  void write_status(const kube::Object& job, const kube::Object& status);
  void apply(const kube::Object& job, const Plan& plan);

  // constant after construction
  kube::Client& client_;
  Cache& cache_;
  KeyGenerator& keys_;
  Recorder& recorder_;
  kube::Clock& clock_;
  const ReconcilerOptions options_;
};

}  // namespace mpijob
