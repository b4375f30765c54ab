// The elastic driver (horovodrun's ElasticDriver + WorkerStateRegistry, runner/elastic/): owns
// the membership of an elastic job and publishes it in the job's store as rounds
// (/work/notes/elastic-contract.md, docs/elastic.md "korovodrun"). A state machine without
// threads or I/O of its own: the caller feeds it worker exits and calls tick(); everything it
// does to the world (clock, discovery, store, processes, console) goes through ElasticWorld, so
// tests drive it with a fake clock and fake processes.
//
//  - Discovery every `discovery_interval` (Horovod: 1 s). A failure of the first run ends the
//    job (a misconfiguration); later failures are reported and the last hosts kept.
//  - Round 1 once `start_np` slots are available (waiting at most elastic_timeout).
//  - A member that fails, or one whose host left discovery: a new round without it at once.
//  - New slots (a new host, more slots, a failed worker's slot, a host back from its cooldown)
//    join in a new round once the current round has formed (every member reported ready), so
//    survivors resume without waiting for a new process to start.
//  - A round below min_np is not published; below it for elastic_timeout ends the job.
//  - The first member to exit 0 ends training: no more rounds; the job ends when every worker
//    has exited (0 if every member did), at most elastic_timeout later.
//  - The job fails when every member has failed, when no survivor holds the training state,
//    when a new round would exceed --reset-limit.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "launch/discovery.h"
#include "launch/elastic_round.h"
#include "launch/host_blacklist.h"

namespace korovod::launcher {

struct ElasticOptions {
  int start_np = 1;  // -np: slots to wait for before round 1
  int min_np = 1;
  std::optional<int> max_np;
  std::chrono::milliseconds elastic_timeout{600'000};
  std::optional<int> reset_limit;
  std::chrono::milliseconds discovery_interval{1000};
  std::chrono::milliseconds ready_poll_interval{50};
  bool verbose = false;
  // How the driver's messages name the limits: korovodrun's flags, or a runner's arguments.
  struct Names {
    std::string elastic_timeout = "--elastic-timeout";
    std::string start_np = "-np";
    std::string min_np = "--min-np";
    std::string reset_limit = "--reset-limit";
  } names;
};

class ElasticWorld {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~ElasticWorld() = default;
  virtual Clock::time_point now() = 0;
  virtual Result<std::vector<HostSlots>> discover() = 0;
  virtual Status set_key(const std::string& key, const std::string& value) = 0;
  virtual Result<int64_t> add_to_key(const std::string& key, int64_t delta) = 0;
  // The value now, nullopt when the key does not exist (no waiting, no key created).
  virtual Result<std::optional<std::string>> read_key(const std::string& key) = 0;
  // Starts the worker's process (its round is already published). Its exit comes back
  // through ElasticDriver::on_worker_exit.
  virtual Status start_worker(const WorkerSlot& worker) = 0;
  virtual void stop_worker(const WorkerSlot& worker) = 0;
  virtual void say(const std::string& line) = 0;
};

struct ElasticOutcome {
  int exit_code = 0;
  std::string message;  // why it failed ("" on success)
};

class ElasticDriver {
 public:
  using Clock = ElasticWorld::Clock;
  ElasticDriver(ElasticOptions options, HostBlacklist blacklist, ElasticWorld& world);

  void tick();
  void on_worker_exit(const WorkerSlot& worker, int exit_code);
  // The job is over; the caller stops whatever still runs and exits with outcome()->exit_code.
  const std::optional<ElasticOutcome>& outcome() const { return outcome_; }
  // When tick() has something to do next.
  Clock::time_point next_wakeup() const;

  int round() const { return round_; }
  const std::vector<RoundMember>& members() const { return members_; }
  bool round_formed() const { return formed_; }

 private:
  struct Worker {
    Clock::time_point started;
    bool ever_ready = false;  // completed some round's init: holds the training state
  };
  void discover(Clock::time_point now);
  void poll_ready(Clock::time_point now);
  void maybe_publish(Clock::time_point now);
  void check_finished(Clock::time_point now);
  bool wait_for_slots(Clock::time_point now, int wanted, int available);
  RoundInputs round_inputs(Clock::time_point now, bool add_new) const;
  Status publish(const std::vector<RoundMember>& members, Clock::time_point now);
  bool is_member(const WorkerSlot& w) const;
  void fail(int exit_code, const std::string& message);

  ElasticOptions options_;
  HostBlacklist blacklist_;
  ElasticWorld& world_;

  std::vector<HostSlots> hosts_;  // discovered, in host order
  bool discovered_ = false;
  std::string discovery_error_;   // the last one reported, to say it once
  Clock::time_point next_discovery_{};
  Clock::time_point next_ready_poll_{};

  std::map<WorkerSlot, Worker> alive_;  // workers with a running process
  std::set<std::string> ever_assigned_;
  std::set<WorkerSlot> retiring_;       // alive, out of the round: stopped once the round forms
  int round_ = 0;
  std::vector<RoundMember> members_;
  std::set<WorkerSlot> ready_;
  bool formed_ = false;
  bool any_round_formed_ = false;
  Clock::time_point round_published_{};
  std::optional<Clock::time_point> short_since_;  // not enough slots since then
  int resets_ = 0;
  std::optional<int> first_failure_code_;
  std::optional<Clock::time_point> finishing_until_;  // a member exited 0: waiting for the rest
  std::optional<int> finish_failure_code_;
  std::optional<ElasticOutcome> outcome_;
};

}  // namespace korovod::launcher
