// The engine: what a job's collectives are made of -- the providers, the process sets (each with
// its tensor queue and negotiator), the handle table, fusion, the executor, the timeline and the
// tuned parameters -- and one negotiation cycle over them (run_cycle), which may stop at a ready
// event and be resumed later on another thread. It starts no thread and decides no timing: the
// CycleDriver (cycle_driver.h) owns the threads, the pacing and the engine's life, and runs the
// cycles one at a time under the engine's cycle lock.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/cycle_trace.h"
#include "core/engine_parameters.h"
#include "core/logger.h"
#include "core/process_set.h"
#include "core/response_executor.h"
#include "core/timed_mutex.h"

namespace korovod {

class Engine {
 public:
  explicit Engine(RuntimeOptions options);
  // The global and static process sets, the startup line (rank 0), the timeline
  // (KOROVOD_TIMELINE) and the tuned parameters.
  Status start();
  // After the last cycle and once no caller is inside (CycleDriver::shutdown): the process sets,
  // the providers and the transport go (MPI_Finalize, when korovod initialised MPI).
  void release();

  const WorldInfo& world() const { return world_; }
  const Config& config() const { return config_; }
  Env& env() const { return *env_; }
  Logger& log() { return log_; }
  const std::string& transport_name() const { return transport_name_; }
  const std::vector<std::string>& backend_names() const { return backend_names_; }
  HandleTable& handles() { return handles_; }
  ProcessSetTable& process_sets() { return sets_; }
  Timeline& timeline() { return timeline_; }
  // KOROVOD_TIMELINE=DYNAMIC: started and stopped at run time (rank 0 only writes one).
  Status start_timeline(const std::string& path, bool mark_cycles);

  // ---- the caller's side: operations into their set's queue ----
  // The set an operation goes to; `hold` keeps any but the global set alive meanwhile.
  Result<ProcessSet*> set_for_enqueue(int set_id, std::shared_ptr<ProcessSet>& hold);
  Result<Handle> enqueue_one(ProcessSet& set, CollectiveArgs&& args);
  Result<std::vector<Handle>> enqueue(ProcessSet& set, std::vector<CollectiveArgs> args);
  // A GPU tensor has been enqueued: from then on cycles may block in NCCL (see inline_safe()).
  bool device_tensors_seen() const { return device_tensors_seen_.load(); }
  // Dynamic process sets: what add_process_set / remove_process_set may ask (KOROVOD_DYNAMIC_
  // PROCESS_SETS, valid and new ranks -- sorted here --, a set that exists and is not the global
  // one). The change itself goes through process_sets().submit_change to the next cycle of the
  // global set, which applies it on every rank.
  Status check_new_process_set(std::vector<int>& ranks) const;
  Status check_removable_process_set(int id) const;

  // ---- the cycle (cycle_mu_ held: one at a time, whichever thread) ----
  enum class CycleEnd { kDone, kStopped, kSuspended };
  struct CycleResult {
    CycleEnd end = CycleEnd::kDone;
    Status error;              // kStopped: why (ok = an agreed shutdown)
    bool idle = false;         // not kSuspended: no tensor waits for other ranks in any set
    bool sets_changed = false; // a process set was added or removed: inline_safe() may differ
  };
  bool cycle_in_progress() const KOROVOD_REQUIRES(cycle_mu_) { return cycle_.has_value(); }
  // The next cycle, or the rest of the one left suspended: each process set's negotiation (the
  // global set's carries `shutdown`, this rank's wish to leave), then each agreed response in
  // order. kSuspended: a ready event was still not ready at `give_up_at`; the cycle stays, to be
  // resumed at that response.
  CycleResult run_cycle(Env::TimePoint give_up_at, bool shutdown) KOROVOD_REQUIRES(cycle_mu_);
  // A cycle left half done lets go of its operations (the driver fails their handles).
  void abandon_cycle() KOROVOD_REQUIRES(cycle_mu_);

  // ---- what the driver's pacing asks ----
  // News of the engine's own for the next cycle: a parameter update or a process-set change.
  bool has_news() const { return params_pending_.load() || sets_.change_pending(); }
  double cycle_time_ms() const { return params_->cycle_time_ms(); }
  // Every set's negotiation and data waits give up by themselves on a dead or stuck peer
  // (control and data plane in shared memory) and no GPU tensor was seen: safe for a waiting
  // caller to run the cycles on its own thread.
  bool inline_safe() const;
  // Event mode: the global set's data plane when its bit-vector rounds offer an idle doorbell.
  Backend* find_idle_plane() const;

  // ---- endings ----
  // Every operation still queued or pending fails with `status`; set changes too.
  void drain(const Status& status);
  void fail_pending(const Status& status);
  // Watchdog: each set's plane ends the wait in progress, naming the peers it waited for; true
  // when one could.
  bool interrupt_waits(const std::string& why);
  // The watchdog's probe for a stuck loop that no plane could interrupt (ControlChannel::silent_peers).
  std::string silent_peers(double window_seconds);
  // Where the cycle in progress is (CycleTrace::describe; any thread): "" outside a cycle.
  std::string cycle_position() const { return trace_.describe(); }
  void abort_job(int exit_code) { transport_->abort_job(exit_code); }

 private:
  friend class CycleDriver;  // locks cycle_mu_ around run_cycle

  ProcessSetDeps deps();
  Status make_entry(CollectiveArgs& args, ProcessSet& set, Handle handle, int group_id, int group_size,
                    TensorEntry& entry);
  bool finish_cycle(Status* error) KOROVOD_REQUIRES(cycle_mu_);  // after the last set: parameters, set change
  bool apply_set_change();                                        // true when one was applied
  bool all_idle() const;

  const Config config_;
  const std::shared_ptr<Env> env_;  // the engine's time: stamps, the watchdog and every wait
  Logger log_;
  // Providers are declared before the process sets so they outlive the channels they made.
  std::shared_ptr<TransportProvider> transport_;
  std::vector<std::shared_ptr<BackendProvider>> backend_providers_;
  const std::vector<std::vector<int>> static_sets_;
  WorldInfo world_;
  std::string transport_name_;
  std::vector<std::string> backend_names_;

  HandleTable handles_;
  Timeline timeline_;
  CycleTrace trace_;  // before the sets: their negotiators write to it
  ProcessSetTable sets_;
  // The global set lives as long as the engine runs (the driver waits for callers inside before
  // release()): no table lock and no reference count per tensor for it.
  std::shared_ptr<ProcessSet> global_set_;
  std::atomic<bool> device_tensors_seen_{false};
  std::atomic<bool> params_pending_{false};  // rank 0 has a parameter update for the next cycle

  // One negotiation cycle at a time, whichever thread runs it: cycles are collectives matched
  // by order across ranks, not by thread, so a waiting caller may run them instead of the
  // background thread. Timed: a caller with a deadline gives up waiting for it
  // (CycleDriver::lock_cycle_until). A TimedMutex rather than std::timed_mutex so that
  // ThreadSanitizer sees its timed lock (core/timed_mutex.h).
  TimedMutex cycle_mu_;
  FusionBufferManager fusion_ KOROVOD_GUARDED_BY(cycle_mu_);
  FusionPlanner planner_ KOROVOD_GUARDED_BY(cycle_mu_);
  // From RuntimeOptions::make_executor, over the parts above (null: none given; start() fails).
  // Behind the interface so that core needs nothing of algorithms/, where the executor lives;
  // one virtual call per executed response.
  const std::unique_ptr<ResponseExecutor> executor_ KOROVOD_PT_GUARDED_BY(cycle_mu_);
  std::unique_ptr<EngineParameters> params_;  // set in start(); then read by cycles and pacing
  // The cycle in progress, between its steps: each process set's negotiation, then each of its
  // responses in order. Kept when a caller's thread gives up on a ready event mid-cycle
  // (ResponseExecutor::execute), so that another thread -- the background one, woken for it, or the
  // next waiting caller -- carries on with the same cycle: every rank runs the same collectives
  // in the same order, so neither the negotiation of the next set nor a new cycle may come first.
  struct CycleRun {
    std::vector<std::shared_ptr<ProcessSet>> sets;  // members in id order, as the cycle began
    size_t set = 0;                                 // sets[set] is the one in progress
    bool negotiated = false;                        // sets[set]: its responses are in `planned`
    std::vector<ResponsePtr> planned;
    size_t next = 0;                                // planned[next] runs next
    bool shutdown = false;                          // from the global set's negotiation
    bool apply_change = false;
    bool refuse_changes = false;  // set changes pending here while a rank has joined
    std::string param_update;
    int64_t bytes_reduced = 0;
  };
  std::optional<CycleRun> cycle_ KOROVOD_GUARDED_BY(cycle_mu_);
};

}  // namespace korovod
