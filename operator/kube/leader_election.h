// LeaderElector: leader election on a coordination.k8s.io/v1 Lease, after client-go's
// leaderelection package. A candidate takes the lease when it is absent or expired, renews it
// every retry period, and gives leadership up when it cannot renew within the renew deadline.
// Expiry is judged by when this process last saw the lease change (its own clock), not by the
// renewTime written by another machine, so clock skew between candidates does not matter.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>

#include "kube/client.h"
#include "kube/clock.h"
#include "kube/mutex.h"

namespace kube {

struct LeaderElectionConfig {
  std::string lease_namespace;
  std::string lease_name;
  std::string identity;  // unique per candidate, e.g. the pod name
  std::chrono::seconds lease_duration{15};
  std::chrono::seconds renew_deadline{10};
  std::chrono::seconds retry_period{2};
  bool release_on_stop = true;  // hand the lease back on stop() so a successor need not wait
  std::function<void()> on_started_leading;
  std::function<void()> on_stopped_leading;
  std::function<void(const std::string& identity)> on_new_leader;  // optional
  std::function<void(const std::string&)> on_error;                // optional, e.g. to log
};

class LeaderElector {
 public:
  // Throws std::invalid_argument on an inconsistent config (e.g. renew_deadline >= lease).
  LeaderElector(Client& client, LeaderElectionConfig config, Clock& clock);

  // Blocks: acquires the lease, leads until leadership is lost or stop() is called, then
  // releases it (if configured) and returns.
  void run();
  void stop();  // thread-safe
  bool is_leader() const;
  std::string observed_leader() const;

  // One acquire-or-renew attempt; true when this candidate holds the lease afterwards.
  bool try_acquire_or_renew();
  // Clears holderIdentity (leaseDurationSeconds 1) if this candidate holds the lease.
  void release();

 private:
  bool wait_retry_period();  // false when stopped
  bool renew_within_deadline();
  Object lease_object(const std::string& acquire_time, int transitions) const;
  void observe(const Object& spec);
  void report(const std::string& what) const;

  Client& client_;
  const LeaderElectionConfig config_;
  Clock& clock_;

  std::atomic<bool> stopped_{false};
  mutable Mutex mu_;
  std::condition_variable cv_;  // wakes waits on stop()
  bool leader_ KOROVOD_GUARDED_BY(mu_) = false;
  std::string observed_holder_ KOROVOD_GUARDED_BY(mu_);
  std::string observed_renew_time_ KOROVOD_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point observed_at_ KOROVOD_GUARDED_BY(mu_){};
};

}  // namespace kube
