// The engine behind korovod::Runtime. Owns the providers, the process sets (each with its tensor
// queue and negotiator), the handle table, the fusion buffer, the timeline, the background
// thread and the watchdog. Shared with the background thread, so that a thread stuck in a dead
// collective can be abandoned at shutdown without freeing what it still touches.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "core/engine_parameters.h"
#include "core/executor.h"
#include "core/logger.h"
#include "core/mutex.h"
#include "core/process_set.h"
#include "core/timed_mutex.h"
#include "core/watchdog.h"

namespace korovod {

class RuntimeImpl : public std::enable_shared_from_this<RuntimeImpl> {
 public:
  explicit RuntimeImpl(RuntimeOptions options);
  ~RuntimeImpl();
  Status start();  // static process sets, background thread, watchdog
  Status shutdown();
  bool running() const { return running_.load(); }

  const WorldInfo& world() const { return world_; }
  const Config& config() const { return config_; }
  Env& env() const { return *env_; }
  std::string transport_name() const { return transport_name_; }
  std::vector<std::string> backend_names() const { return backend_names_; }

  Result<std::vector<Handle>> enqueue(std::vector<CollectiveArgs> args);
  Result<Handle> enqueue_one(CollectiveArgs&& args);  // enqueue() of a single operation, no vectors
  HandleTable& handles() { return handles_; }
  // runtime_drive.cc. With KOROVOD_INLINE_CYCLES (the default) the waiting thread runs the
  // negotiation cycles itself while its operation is pending, so a synchronous collective
  // costs no thread hand-off; poll() wakes the background thread for work it has not seen. A
  // timed wait returns by its deadline, leaving a cycle held up by a ready event to another
  // thread (see runtime_drive.cc for the one thing it cannot cut short).
  Status wait(Handle handle, std::optional<double> timeout_seconds);
  Result<bool> poll(Handle handle);
  Status fatal_error() const;

  Result<int> add_process_set(std::vector<int> ranks);
  Status remove_process_set(int id);
  ProcessSetTable& process_sets() { return sets_; }

  Status start_timeline(const std::string& path, bool mark_cycles);
  void stop_timeline() { timeline_.stop(); }

 private:
  // runtime_impl.cc: the background loop
  void background_loop();
  void wait_for_next_cycle();
  void notify_work();  // wakes the background thread for queued work
  // Wakes the background thread to look again now, with no news of its own: no caller will run
  // the next cycle inline (a waiter that returned, a poll). Unlike notify_work, no cycle runs for
  // it unless there is something to negotiate (event mode).
  void wake_background();
  void note_work();    // enqueue: a request was queued (wakes only without inline cycles)
  void ring_engine();  // wakes whoever sleeps on the idle plane's doorbell (event mode)
  // One cycle on whichever thread holds cycle_mu_ (background or a waiting caller): marks,
  // watchdog, run_one_cycle -- or the rest of a cycle another thread left suspended.
  // give_up_at: when this thread must be back (a caller's timed wait). kStopped: the engine stops
  // (loop_done_ is set, everyone is woken); kSuspended: a ready event kept the cycle waiting
  // past give_up_at, and the background thread has been woken to resume it.
  enum class CycleEnd { kDone, kStopped, kSuspended };
  CycleEnd run_cycle_locked(std::chrono::steady_clock::time_point give_up_at) KOROVOD_REQUIRES(cycle_mu_);
  CycleEnd run_one_cycle(std::chrono::steady_clock::time_point give_up_at) KOROVOD_REQUIRES(cycle_mu_);
  bool finish_cycle() KOROVOD_REQUIRES(cycle_mu_);  // after the last set: parameters, set change
  // cycle_mu_ for a waiting caller, given up at its deadline (the holder may be in a long cycle).
  bool lock_cycle_until(std::chrono::steady_clock::time_point deadline) KOROVOD_TRY_ACQUIRE(true, cycle_mu_);
  void drive_cycles(Handle handle, std::chrono::steady_clock::time_point deadline);
  // runtime_drive.cc, event mode: with the global set negotiating on a data plane that offers
  // an idle doorbell (shared memory), no cycle runs unless it has something to do -- local news
  // (queued requests, a set change, a parameter update), a round another rank has started, or
  // the stall inspector's periodic look while tensors wait -- and the threads that would run
  // cycles sleep on the doorbell meanwhile instead of waking every cycle time.
  Backend* find_idle_plane() const;
  bool has_news() const;
  std::chrono::steady_clock::duration stall_recheck() const;
  bool cycle_worth_running(Backend& plane) KOROVOD_REQUIRES(cycle_mu_);
  void wait_for_news(Backend& plane, std::chrono::steady_clock::duration cycle);
  bool loop_done() const;
  bool inline_safe() const;  // from the current sets; cached in inline_possible_
  void apply_set_change();
  void drain(const Status& status);
  void record_fatal(const Status& status);
  void on_watchdog_timeout();
  ProcessSetDeps deps();
  // runtime_enqueue.cc
  void wake_for_set_change();
  // The process set an operation goes to; `hold` keeps any but the global set alive meanwhile.
  Result<ProcessSet*> set_for_enqueue(int set_id, std::shared_ptr<ProcessSet>& hold);
  Status make_entry(CollectiveArgs& args, const ProcessSet& set, Handle handle, int group_id, int group_size,
                    TensorEntry& entry);

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
  ProcessSetTable sets_;
  FusionBufferManager fusion_;  // background thread only
  FusionPlanner planner_;       // background thread only
  Executor executor_;           // background thread only
  std::unique_ptr<EngineParameters> params_;  // set in start(); background thread only after

  // Event mode: the global set's data plane, whose doorbell idle threads sleep on (null: timer
  // mode). Callers that may use it count themselves in callers_inside_ (CallerInside); shutdown
  // clears it and waits for them before the process sets go.
  std::atomic<Backend*> idle_plane_{nullptr};
  std::shared_ptr<ProcessSet> global_set_;  // from start() until shutdown(), like idle_plane_
  std::atomic<int> callers_inside_{0};
  struct CallerInside {
    explicit CallerInside(RuntimeImpl& r) : self(r) { self.callers_inside_.fetch_add(1); }
    ~CallerInside() { self.callers_inside_.fetch_sub(1); }
    RuntimeImpl& self;
  };
  std::atomic<bool> params_pending_{false};  // rank 0 has a parameter update for the next cycle
  std::atomic<bool> running_{false};
  std::atomic<bool> shutdown_requested_{false};
  // One negotiation cycle at a time, whichever thread runs it: cycles are collectives matched
  // by order across ranks, not by thread, so a waiting caller may run them instead of the
  // background thread. Everything "background thread only" is guarded by it in effect. Timed:
  // a caller with a deadline gives up waiting for it (lock_cycle_until). A TimedMutex rather than
  // std::timed_mutex so that ThreadSanitizer sees its timed lock (core/timed_mutex.h).
  TimedMutex cycle_mu_;
  // The cycle in progress, between its steps: each process set's negotiation, then each of its
  // responses in order. Kept when a caller's thread gives up on a ready event mid-cycle
  // (Executor::execute), so that another thread -- the background one, woken for it, or the
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
    std::string param_update;
    int64_t bytes_reduced = 0;
  };
  std::optional<CycleRun> cycle_ KOROVOD_GUARDED_BY(cycle_mu_);
  std::atomic<std::thread::id> cycle_owner_{};  // the thread inside a cycle (callbacks may wait)
  mutable Mutex state_mu_;
  std::condition_variable state_cv_;  // loop exit, shutdown and new-work wake-ups
  bool inline_driving_ KOROVOD_GUARDED_BY(state_mu_) = false;  // a waiting caller runs the cycles; the background thread stands by
  bool loop_done_ KOROVOD_GUARDED_BY(state_mu_) = false;       // some cycle ended the engine (shutdown agreed, error, watchdog)
  bool cycle_suspended_ KOROVOD_GUARDED_BY(state_mu_) = false; // cycle_ waits for a thread to resume it (the background thread's cue)
  // KOROVOD_INLINE_CYCLES and inline_safe(): recomputed whenever the process sets change.
  std::atomic<bool> inline_possible_{false};
  std::atomic<bool> device_tensors_seen_{false};  // some GPU tensor was enqueued
  std::chrono::steady_clock::time_point last_cycle_start_ KOROVOD_GUARDED_BY(state_mu_){};  // paces the background thread
  std::chrono::steady_clock::time_point news_since_ KOROVOD_GUARDED_BY(state_mu_){};  // event mode: news first seen (reset per cycle)
  bool wake_now_ KOROVOD_GUARDED_BY(state_mu_) = false;  // wake_background: no caller will run the next cycle inline (reset per cycle)
  // A request queued since the loop last looked, and whether the last cycle had nothing to do:
  // an idle engine starts a cycle as soon as work arrives instead of sleeping out cycle_time.
  // Set by enqueue without state_mu_ when no wake-up is due (note_work); read under it.
  std::atomic<bool> work_queued_{false};
  bool engine_idle_ KOROVOD_GUARDED_BY(state_mu_) = true;
  Status fatal_ KOROVOD_GUARDED_BY(state_mu_);               // first background error, resurfaced on every later call
  std::atomic<bool> has_fatal_{false};  // fatal_ is set: enqueue looks without the lock
  bool loop_exited_ KOROVOD_GUARDED_BY(state_mu_) = false;
  std::unique_ptr<Watchdog> watchdog_;
  std::thread background_;
};

}  // namespace korovod
