// Drives MPIJobs through their whole lifecycle on the real control plane while faults happen:
// create, workers Running, launcher Running, launcher Succeeded, delete. It plays the kubelet
// (writes pod status) as the operator integration tests do. Every step survives the API server
// being away: a call that fails is made again on the next round, and each round re-applies
// what the current step wants (a replaced pod gets its phase again). Random holds between
// steps, and launchers that may only succeed after a number of faults, spread the jobs' phases
// over the faults. It records what the checks need: each job's uid, the objects it owned while
// it ran, and its final status.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kube/client.h"

namespace chaos {

using Clock = std::chrono::steady_clock;

// Objects the operator creates for an MPIJob, by resource.
extern const kube::Resource kNetworkPolicies;
std::vector<kube::Resource> owned_resources();

struct JobRecord {
  enum class Step { Waiting, Created, WorkersRunning, LauncherRunning, LauncherSucceeded, Deleted, Gone };
  std::string name;
  int workers = 2;
  Step step = Step::Waiting;
  std::string uid;
  Clock::time_point not_before;   // the next step waits until then (random holds)
  int faults_at_create = 0;
  int faults_before_success = 0;  // the launcher succeeds only after this many faults more
  std::map<std::string, int> owned_while_running;  // resource -> objects owned (MPIJob uid)
  int worker_pods_while_running = 0;
  kube::Object final_status;  // status when Succeeded was seen, before the delete
  double seconds_to_gone = 0;
  Clock::time_point created_at;
};
const char* step_name(JobRecord::Step s);

class LifecycleDriver {
 public:
  // `faults` says how many faults have happened so far (the launchers' gate), or -1 once no
  // more will come (the gate opens).
  LifecycleDriver(kube::Client& client, std::string ns, int jobs, int workers, uint32_t seed,
                  std::function<int()> faults);
  // One round over every job; true once every job is Gone.
  bool round();
  const std::vector<JobRecord>& jobs() const { return jobs_; }
  int api_errors() const { return api_errors_; }  // calls of ours that failed (and were redone)
  std::string progress() const;                   // "Gone 12, Created 3, ..."

 private:
  void step(JobRecord& j);
  void hold(JobRecord& j, int max_ms);
  void audit_owned(JobRecord& j);

  kube::Client& c_;
  const std::string ns_;
  std::mt19937 rng_;
  std::function<int()> faults_;
  std::vector<JobRecord> jobs_;
  int api_errors_ = 0;
};

}  // namespace chaos
