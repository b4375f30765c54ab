#include "kube/mutex.h"
#include "mpijob/reconciler.h"

#include <atomic>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

#include "kube/object_meta.h"
#include "mpijob/membership.h"

namespace mpijob {
namespace {

// Runs fn(i) for i in [0, n) on up to `threads` threads; rethrows the first failure.
void parallel_for(size_t n, int threads, const std::function<void(size_t)>& fn) {
  std::atomic<size_t> next{0};
  std::exception_ptr first;
  kube::Mutex mu;
  auto work = [&] {
    for (size_t i = next++; i < n; i = next++) {
      try {
        fn(i);
      } catch (...) {
        kube::MutexLock lock(mu);
        if (!first) first = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  const size_t count = std::min(n, static_cast<size_t>(std::max(threads, 1)));
  for (size_t t = 1; t < count; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (first) std::rethrow_exception(first);
}

// Applies one action. Create of an existing object and Delete of a missing one are not
// errors: the cache was behind, and the next sync sees the truth.
kube::Object apply_action(kube::Client& client, const std::string& ns, const Action& a) {
  switch (a.verb) {
    case Action::Verb::Create:
      try {
        return client.create(a.resource, ns, a.object);
      } catch (const kube::ApiError& e) {
        if (kube::is_already_exists(e)) return {};
        throw;
      }
    case Action::Verb::Update:
      return client.update(a.resource, ns, a.object);
    case Action::Verb::UpdateStatus:
      return client.update_status(a.resource, ns, a.object);
    case Action::Verb::Delete:
      break;
  }
  kube::DeleteOptions opts;
  opts.propagation_policy = "Background";
  if (!kube::uid_of(a.object).empty()) opts.precondition_uid = kube::uid_of(a.object);
  try {
    client.remove(a.resource, ns, kube::name_of(a.object), opts);
  } catch (const kube::ApiError& e) {
    if (!kube::is_not_found(e) && !kube::is_conflict(e)) throw;  // gone, or already replaced
  }
  return {};
}

bool is_pod_create(const Action& a) {
  return a.verb == Action::Verb::Create && a.resource == kube::resources::kPods;
}

}  // namespace

Reconciler::Reconciler(kube::Client& client, Cache& cache, KeyGenerator& keys, Recorder& recorder,
                       kube::Clock& clock, ReconcilerOptions options)
    : client_(client), cache_(cache), keys_(keys), recorder_(recorder), clock_(clock),
      options_(std::move(options)) {}

Observed Reconciler::observe(const kube::Object& job_obj) {
  const MPIJob job(job_obj);
  const std::string ns = job.ns(), name = job.name();
  Observed o;
  o.launcher_job = cache_.get(kube::resources::kJobs, ns, launcher_name(job));
  if (o.launcher_job && is_controlled_by(*o.launcher_job, job.uid())) {
    o.launcher_pods =
        cache_.controlled_by(kube::resources::kPods, ns, kube::uid_of(*o.launcher_job));
  }
  o.worker_pods = cache_.list(kube::resources::kPods, ns, worker_label_selector(name));
  for (int32_t i = 0; i < job.replicas(ReplicaType::Worker); ++i) {
    const std::string pod = worker_name(job, i);
    bool seen = false;
    for (const auto& p : o.worker_pods) seen = seen || kube::name_of(p) == pod;
    if (seen) continue;
    if (auto p = cache_.get(kube::resources::kPods, ns, pod)) o.worker_pods.push_back(*p);
  }
  o.service = cache_.get(kube::resources::kServices, ns, name);
  o.config_map = cache_.get(kube::resources::kConfigMaps, ns, config_map_name(job));
  o.secret = cache_.get(kube::resources::kSecrets, ns, ssh_secret_name(job));
  if (!options_.build.gang_scheduler.empty()) {
    o.pod_group = cache_.get(pod_group_resource(options_.build), ns, name);
  }
  if (options_.build.network_policy.mode != NetworkPolicyMode::Off) {
    o.network_policy = cache_.get(kNetworkPolicies, ns, network_policy_name(job));
  }
  o.profiles = read_profiles(job_obj);
  o.priority = [this](const std::string& pc) -> std::optional<int32_t> {
    auto obj = cache_.get(kube::resources::kPriorityClasses, "", pc);
    return obj ? member<int32_t>(*obj, "value") : std::nullopt;
  };
  return o;
}

std::optional<ProfileCatalog> Reconciler::read_profiles(const kube::Object& job_obj) {
  const MPIJob job(job_obj);
  if (options_.profiles_name.empty() || job.annotation(kAnnotationProfile).empty() ||
      job.status().profile || is_finished(job.status())) {
    return std::nullopt;
  }
  try {
    return profiles_from_config_map(
        client_.get(kube::resources::kConfigMaps, options_.profiles_namespace, options_.profiles_name));
  } catch (const kube::ApiError& e) {
    if (kube::is_not_found(e)) return ProfileCatalog{};  // configured, but none defined
    throw;
  }
}

void Reconciler::write_status(const kube::Object& job, const kube::Object& status) {
  kube::Object updated = job;
  updated["status"] = status;
  client_.update_status(kMPIJobs, MPIJob(job).ns(), updated);
}

void Reconciler::apply(const kube::Object& job, const Plan& plan) {
  const std::string ns = MPIJob(job).ns();
  std::map<std::string, std::string> written_rv;  // resource/name -> resourceVersion we wrote
  for (size_t i = 0; i < plan.actions.size();) {
    size_t end = i + 1;
    while (is_pod_create(plan.actions[i]) && end < plan.actions.size() &&
           is_pod_create(plan.actions[end])) {
      ++end;
    }
    try {
      parallel_for(end - i, options_.create_concurrency, [&](size_t k) {
        const Action& a = plan.actions[i + k];
        const std::string key = a.resource.resource + "/" + kube::name_of(a.object);
        Action current = a;
        if (auto it = written_rv.find(key); it != written_rv.end()) {
          current.object["metadata"]["resourceVersion"] = it->second;
        }
        kube::Object result = apply_action(client_, ns, current);
        if (a.event_on_success) recorder_.event(job, *a.event_on_success);
        if (end - i == 1) {  // only sequential actions chain resourceVersions
          std::string rv = kube::resource_version_of(result);
          if (!rv.empty()) written_rv[key] = std::move(rv);
        }
      });
    } catch (const std::exception& e) {
      const Action& a = plan.actions[i];
      if (a.verb == Action::Verb::Create && (a.what == "worker pod" || a.what == "launcher job")) {
        const std::string what = a.what == "worker pod" ? "worker pod" : "launcher pod";
        recorder_.event(job, {"Warning", kReasonFailed, what + " created failed: " + e.what()});
      }
      throw;
    }
    i = end;
  }
}

Result Reconciler::reconcile(const std::string& ns, const std::string& name) {
  auto job = cache_.get(kMPIJobs, ns, name);
  if (!job) return {};  // deleted; owner references clean up the rest
  Plan p = plan(*job, observe(*job), options_.build, keys_, clock_.now());
  if (p.skip) return {};
  // Status first: a worker restart is counted durably before its pod is deleted.
  if (p.status) write_status(*job, *p.status);
  // The transitions are durable now: report them even if an action below fails.
  for (const auto& e : p.events) recorder_.event(*job, e);
  for (Counter c : p.counters) recorder_.count(c);
  apply(*job, p);
  if (p.error) throw ResourceExistsError(*p.error);
  return {p.requeue_after};
}

}  // namespace mpijob
