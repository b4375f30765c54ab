#include "lifecycle_driver.h"

#include <algorithm>

#include "../operator/fixture.h"
#include "kube/api_error.h"

namespace chaos {

using optest::kMPIJobs;

const kube::Resource kNetworkPolicies{"networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy",
                                      true};

std::vector<kube::Resource> owned_resources() {
  return {kube::resources::kServices, kube::resources::kConfigMaps, kube::resources::kSecrets,
          kube::resources::kJobs,     kube::resources::kPods,       kNetworkPolicies};
}

const char* step_name(JobRecord::Step s) {
  switch (s) {
    case JobRecord::Step::Waiting: return "Waiting";
    case JobRecord::Step::Created: return "Created";
    case JobRecord::Step::WorkersRunning: return "WorkersRunning";
    case JobRecord::Step::LauncherRunning: return "LauncherRunning";
    case JobRecord::Step::LauncherSucceeded: return "LauncherSucceeded";
    case JobRecord::Step::Deleted: return "Deleted";
    case JobRecord::Step::Gone: return "Gone";
  }
  return "?";
}

namespace {

std::string phase_of(const kube::Object& pod) { return pod["status"].value("phase", "Pending"); }

bool active(const kube::Object& pod) {
  const std::string ph = phase_of(pod);
  return ph != "Succeeded" && ph != "Failed" && !kube::has_deletion_timestamp(pod);
}

}  // namespace

LifecycleDriver::LifecycleDriver(kube::Client& client, std::string ns, int jobs, int workers,
                                 uint32_t seed, std::function<int()> faults)
    : c_(client), ns_(std::move(ns)), rng_(seed), faults_(std::move(faults)) {
  const auto now = Clock::now();
  for (int i = 0; i < jobs; ++i) {
    JobRecord j;
    j.name = "chaos" + std::to_string(i);
    j.workers = workers;
    // Creations spread over the first ~10 s; launchers wait for 0-2 more faults.
    j.not_before = now + std::chrono::milliseconds(i * 500 + rng_() % 500);
    j.faults_before_success = i % 3;
    jobs_.push_back(j);
  }
}

void LifecycleDriver::hold(JobRecord& j, int max_ms) {
  j.not_before = Clock::now() + std::chrono::milliseconds(rng_() % (max_ms + 1));
}

bool LifecycleDriver::round() {
  bool all_gone = true;
  for (auto& j : jobs_) {
    if (j.step == JobRecord::Step::Gone) continue;
    all_gone = false;
    if (Clock::now() < j.not_before) continue;
    try {
      step(j);
    } catch (const std::exception&) {
      ++api_errors_;  // the API server is away or answered 5xx/429: the next round redoes it
    }
  }
  return all_gone;
}

void LifecycleDriver::audit_owned(JobRecord& j) {
  j.owned_while_running.clear();
  for (const auto& r : owned_resources()) {
    for (const auto& o : c_.list(r, ns_, {}).items) {
      for (const auto& ref : o["metadata"].value("ownerReferences", kube::Object::array())) {
        if (ref.value("uid", "") == j.uid) ++j.owned_while_running[r.resource];
      }
    }
  }
  j.worker_pods_while_running = static_cast<int>(optest::worker_pods(c_, ns_, j.name).size());
}

void LifecycleDriver::step(JobRecord& j) {
  using S = JobRecord::Step;
  switch (j.step) {
    case S::Waiting: {
      kube::Object created;
      try {
        created = c_.create(kMPIJobs, ns_, optest::mpijob({.name = j.name, .workers = j.workers}));
      } catch (const kube::ApiError& e) {
        if (!kube::is_already_exists(e)) throw;  // our earlier create landed; its answer did not
        created = c_.get(kMPIJobs, ns_, j.name);
      }
      j.uid = kube::uid_of(created);
      j.created_at = Clock::now();
      j.faults_at_create = std::max(0, faults_());
      j.step = S::Created;
      hold(j, 1000);
      return;
    }
    case S::Created: {
      auto workers = optest::worker_pods(c_, ns_, j.name);
      bool all_running = static_cast<int>(workers.size()) == j.workers;
      for (const auto& p : workers) {
        if (phase_of(p) == "Running") continue;
        all_running = false;
        if (phase_of(p) == "Pending") optest::set_pod_phase(c_, ns_, kube::name_of(p), "Running");
      }
      if (all_running) {
        j.step = S::WorkersRunning;
        hold(j, 1000);
      }
      return;
    }
    case S::WorkersRunning:
    case S::LauncherRunning: {
      bool launcher_running = false;
      for (const auto& p : optest::launcher_pods(c_, ns_, j.name)) {
        if (!active(p)) continue;
        if (phase_of(p) != "Running") optest::set_pod_phase(c_, ns_, kube::name_of(p), "Running");
        launcher_running = true;
      }
      if (!launcher_running) return;
      j.step = S::LauncherRunning;
      if (!optest::has_condition(c_, ns_, j.name, "Running")) return;
      // The gate holds only while faults are still coming (faults_() < 0 once they are over).
      const int faults = faults_();
      if (faults >= 0 && faults - j.faults_at_create < j.faults_before_success) return;
      audit_owned(j);
      for (const auto& p : optest::launcher_pods(c_, ns_, j.name)) {
        if (active(p)) optest::set_pod_phase(c_, ns_, kube::name_of(p), "Succeeded");
      }
      j.step = S::LauncherSucceeded;
      hold(j, 1500);
      return;
    }
    case S::LauncherSucceeded: {
      const kube::Object job = c_.get(kMPIJobs, ns_, j.name);
      const auto succeeded = optest::condition(job, "Succeeded");
      if (!succeeded || succeeded->value("status", "") != "True") return;
      // cleanPodPolicy Running (the default): the workers go once the job succeeded.
      if (!optest::worker_pods(c_, ns_, j.name).empty()) return;
      j.final_status = job["status"];
      kube::DeleteOptions opts;
      opts.propagation_policy = "Background";  // the garbage collector removes what it owned
      try {
        c_.remove(kMPIJobs, ns_, j.name, opts);
      } catch (const kube::ApiError& e) {
        if (!kube::is_not_found(e)) throw;
      }
      j.step = S::Deleted;
      return;
    }
    case S::Deleted:
      if (optest::try_get(c_, kMPIJobs, ns_, j.name)) return;
      j.seconds_to_gone = std::chrono::duration<double>(Clock::now() - j.created_at).count();
      j.step = S::Gone;
      return;
    case S::Gone: return;
  }
}

std::string LifecycleDriver::progress() const {
  std::map<std::string, int> n;
  for (const auto& j : jobs_) ++n[step_name(j.step)];
  std::string out;
  for (const auto& [s, k] : n) out += (out.empty() ? "" : ", ") + s + " " + std::to_string(k);
  return out;
}

}  // namespace chaos
