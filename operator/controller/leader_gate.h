// LeaderGate: the Manager's leader election. It campaigns for a Lease with kube::LeaderElector on
// a thread of its own and lets the controller start only once this replica leads. Losing a lease
// it held, other than by release(), is fatal: another replica may be reconciling already.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <stop_token>
#include <string>
#include <thread>

#include "controller/log.h"
#include "kube/client.h"
#include "kube/clock.h"
#include "kube/leader_election.h"
#include "kube/mutex.h"

namespace controller {

// Defaults are mpi-operator's: Lease "mpi-operator", 15 s lease, 5 s renew deadline, 3 s retry.
struct LeaderElectionOptions {
  std::string lease_namespace;
  std::string lease_name = "mpi-operator";
  std::string identity;  // unique per replica, e.g. <hostname>_<uuid>
  std::chrono::seconds lease_duration{15};
  std::chrono::seconds renew_deadline{5};
  std::chrono::seconds retry_period{3};
  // Called (after the error is logged) when the lease is lost while leading. The default ends the
  // process with exit code 1, as the reference does, so that Kubernetes restarts it as a standby.
  std::function<void()> on_lost = [] { std::_Exit(1); };
};

class LeaderGate {
 public:
  // Throws std::invalid_argument on inconsistent timings (see kube::LeaderElector).
  LeaderGate(kube::Client& client, LeaderElectionOptions options, Logger& log, kube::Clock& clock);
  ~LeaderGate();  // ends a campaign still running, handing the lease back
  LeaderGate(const LeaderGate&) = delete;
  LeaderGate& operator=(const LeaderGate&) = delete;

  // Starts the campaign and blocks until this replica leads (true), or until stop is requested
  // first (false: the campaign is over).
  bool wait_until_leading(std::stop_token stop);
  // Ends the campaign and hands the lease back; no-op when no campaign runs.
  void release();

  bool is_leader() const { return elector_.is_leader(); }
  // For the liveness probe: this replica led, no longer does, and was not asked to stop.
  bool lost() const;

 private:
  kube::LeaderElectionConfig elector_config();
  void end_campaign();
  std::string lease() const { return options_.lease_namespace + "/" + options_.lease_name; }

  // Constant after construction.
  const LeaderElectionOptions options_;
  Logger& log_;

  mutable kube::Mutex mu_;
  std::condition_variable_any leading_cv_;
  bool leading_ KOROVOD_GUARDED_BY(mu_) = false;  // set once the lease is first acquired
  std::atomic<bool> stopping_{false};  // a lease lost from here on was given up, not taken
  kube::LeaderElector elector_;  // after the state its callbacks use
  std::jthread campaign_;        // runs elector_.run()
};

}  // namespace controller
