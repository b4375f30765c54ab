// Leader election on a coordination.k8s.io/v1 Lease, with client-go's semantics: a candidate
// takes the Lease when it is free or its holder has not renewed it for leaseDuration (measured
// on this process's clock from when the record last changed, so clock skew does not matter);
// the leader renews every retryPeriod and gives up (lost) when renewals keep failing for
// renewDeadline. release() empties holderIdentity so a successor need not wait out the lease.
// Defaults are the reference's: 15s / 5s / 3s, Lease "mpi-operator".
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <stop_token>
#include <string>

#include "controller/log.h"
#include "kube/client.h"
#include "kube/clock.h"

namespace controller {

struct LeaderElectionConfig {
  std::string lock_namespace = "mpi-operator";
  std::string lease_name = "mpi-operator";
  std::string identity;  // hostname_uuid
  std::chrono::milliseconds lease_duration{15'000};
  std::chrono::milliseconds renew_deadline{5'000};
  std::chrono::milliseconds retry_period{3'000};
};

class LeaderElector {
 public:
  LeaderElector(kube::Client& client, LeaderElectionConfig config, kube::Clock& clock, Logger& log)
      : client_(client), config_(std::move(config)), clock_(clock), log_(log) {}

  // Blocks until this process holds the Lease (true) or stop is requested (false).
  bool acquire(std::stop_token stop);
  // Renews until stop is requested (returns normally) or renewing fails for renew_deadline
  // (calls on_lost and returns).
  void keep_renewing(std::stop_token stop, const std::function<void()>& on_lost);
  // Gives the Lease up if we hold it (best effort).
  void release();

  // For the /healthz watchdog: how long since the last successful acquire/renew.
  std::chrono::steady_clock::duration since_last_renew() const;
  bool is_leader() const;

  // One attempt: true when we hold the Lease afterwards.
  bool try_acquire_or_renew();

 private:
  bool sleep(std::stop_token& stop, std::chrono::milliseconds d);

  // Constant after construction.
  kube::Client& client_;
  const LeaderElectionConfig config_;
  kube::Clock& clock_;
  Logger& log_;

  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  kube::Object observed_spec_;                              // GUARDED_BY(mu_)
  std::chrono::steady_clock::time_point observed_at_{};     // GUARDED_BY(mu_)
  std::chrono::steady_clock::time_point last_renew_{};      // GUARDED_BY(mu_)
  bool leader_ = false;                                     // GUARDED_BY(mu_)
};

// "2026-01-02T03:04:05.123456Z" (metav1.MicroTime).
std::string format_micro_time(std::chrono::system_clock::time_point t);

}  // namespace controller
