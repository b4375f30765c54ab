// The pure interface the reconciler calls: plan(MPIJob, what exists, options, now) -> what to
// write. One sync of the reference's syncHandler, without I/O:
//
//   Plan p = plan(job_json, observed, options, keys, now);
//   if (p.skip) return;                       // managedBy another controller, or being deleted
//   if (p.status) update_status(*p.status);   // first: the restart count must be durable
//                                             // before the pods it counts are deleted
//   for (a : p.actions) apply(a);             // in order; stop at the first failure
//   for (e : p.events) record(e); for (c : p.counters) bump(c);
//   if (p.error) fail the sync (requeue with backoff); if (p.requeue_after) requeue later.
//
// Key generation is the only non-determinism; it happens only when the Secret must be written.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "mpijob/builders.h"
#include "mpijob/profile.h"
#include "mpijob/status.h"

namespace mpijob {

// What the reconciler read from its caches for one MPIJob (all in the job's namespace).
struct Observed {
  std::optional<kube::Object> launcher_job;  // the Job named <job>-launcher, whoever owns it
  std::vector<kube::Object> launcher_pods;   // pods controlled by that Job
  // Pods labelled job-name=<job>, job-role=worker, plus any pod named <job>-worker-<i>
  // (i < replicas) whoever owns it: plan() tells ours from others by the controller reference.
  std::vector<kube::Object> worker_pods;
  std::optional<kube::Object> service, config_map, secret, pod_group;  // by name, any owner
  std::optional<kube::Object> network_policy;  // <job>-netpol, any owner (read unless the mode is off)
  PriorityLookup priority;  // PriorityClass values, for PodGroup minResources
  // The admins' profiles (profile.h): read for a job that names one and has none pinned in
  // its status yet; nullopt when this operator has no profiles configured (or did not read them).
  std::optional<ProfileCatalog> profiles;
};

struct Action {
  enum class Verb { Create, Update, UpdateStatus, Delete };
  Verb verb = Verb::Create;
  kube::Resource resource;
  // Delete: metadata.name (+ uid, used as a precondition). An Update that follows another
  // write of the same object in one plan takes the resourceVersion that write returned.
  kube::Object object;
  std::string what;     // "worker pod", "launcher job", ... for logs and failure events
  // Recorded once the write succeeded (a change the event reports must have happened: a
  // conflict retried by the next sync reports it then, once).
  std::optional<Event> event_on_success;
};

struct Plan {
  bool skip = false;
  std::string skip_reason;
  std::optional<kube::Object> status;  // the MPIJob's new .status, when it changed
  std::vector<Action> actions;
  std::vector<Event> events;
  std::vector<Counter> counters;
  std::optional<std::string> error;  // an object of ours is taken by someone else
  std::optional<std::chrono::seconds> requeue_after;
};

Plan plan(const kube::Object& mpijob, const Observed& observed, const BuildOptions& opts,
          KeyGenerator& keys, std::chrono::system_clock::time_point now);

// "Resource \"x\" of Kind \"Pod\" already exists and is not managed by MPIJob"
std::string resource_exists_message(const std::string& name, const std::string& kind);

}  // namespace mpijob
