// What korovod::Runtime runs on: the cycle driver. It owns the engine (engine.h: queues, process
// sets and one cycle's execution) and decides which thread runs the next cycle and when: the
// background thread on its timer or doorbell, or a caller waiting for its operation
// (cycle_driver_wait.cc). It owns the state machine of a running engine -- the flags below,
// under state_mu_, and the engine's cycle lock taken around every cycle --, the watchdog and the
// first fatal error, which every later call returns. Shared with the background thread, so that
// a thread stuck in a dead collective can be abandoned at shutdown without freeing what it still
// touches.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <optional>
#include <thread>

#include "core/engine.h"
#include "core/mutex.h"
#include "core/watchdog.h"

namespace korovod {

class CycleDriver : public std::enable_shared_from_this<CycleDriver> {
 public:
  explicit CycleDriver(RuntimeOptions options) : engine_(std::move(options)) {}
  ~CycleDriver();
  Status start();  // the engine's sets, then the background thread and the watchdog
  Status shutdown();
  bool running() const { return running_.load(); }
  Engine& engine() { return engine_; }
  const Engine& engine() const { return engine_; }

  Result<std::vector<Handle>> enqueue(std::vector<CollectiveArgs> args);
  Result<Handle> enqueue_one(CollectiveArgs&& args);  // enqueue() of a single operation, no vectors
  // cycle_driver_wait.cc. With KOROVOD_INLINE_CYCLES (the default) the waiting thread runs the
  // negotiation cycles itself while its operation is pending, so a synchronous collective
  // costs no thread hand-off; poll() wakes the background thread for work it has not seen. A
  // timed wait returns by its deadline, leaving a cycle held up by a ready event to another
  // thread (see cycle_driver_wait.cc for the one thing it cannot cut short).
  Status wait(Handle handle, std::optional<double> timeout_seconds);
  Result<bool> poll(Handle handle);
  Status fatal_error() const;

  Result<int> add_process_set(std::vector<int> ranks);
  Status remove_process_set(int id);

 private:
  using TimePoint = Env::TimePoint;
  using CycleEnd = Engine::CycleEnd;

  // cycle_driver.cc: the background loop
  void background_loop();
  void wait_for_next_cycle();
  void notify_work();  // wakes the background thread for queued work
  // Wakes the background thread to look again now, with no news of its own: no caller will run
  // the next cycle inline (a waiter that returned, a poll). Unlike notify_work, no cycle runs for
  // it unless there is something to negotiate (event mode).
  void wake_background();
  void note_work();    // enqueue: a request was queued (wakes only without inline cycles)
  void ring_engine();  // wakes whoever sleeps on the idle plane's doorbell (event mode)
  void wake_for_set_change();
  Result<ProcessSet*> set_for_enqueue(int set_id, std::shared_ptr<ProcessSet>& hold);
  void after_enqueue();  // a GPU tensor ends inline cycles; then note_work
  // One cycle on whichever thread holds the cycle lock (background or a waiting caller): marks,
  // watchdog, Engine::run_cycle -- or the rest of a cycle another thread left suspended.
  // give_up_at: when this thread must be back (a caller's timed wait). kStopped: the engine stops
  // (loop_done_ is set, everyone is woken); kSuspended: a ready event kept the cycle waiting
  // past give_up_at, and the background thread has been woken to resume it.
  CycleEnd run_cycle_locked(TimePoint give_up_at) KOROVOD_REQUIRES(engine_.cycle_mu_);
  // The cycle lock for a waiting caller, given up at its deadline (the holder may be in a long cycle).
  bool lock_cycle_until(TimePoint deadline) KOROVOD_TRY_ACQUIRE(true, engine_.cycle_mu_);
  void drive_cycles(Handle handle, TimePoint deadline);
  // cycle_driver_wait.cc, event mode: with the global set negotiating on a data plane that offers
  // an idle doorbell (shared memory), no cycle runs unless it has something to do -- local news
  // (queued requests, a set change, a parameter update), a round another rank has started, or
  // the stall inspector's periodic look while tensors wait -- and the threads that would run
  // cycles sleep on the doorbell meanwhile instead of waking every cycle time.
  bool has_news() const;
  std::chrono::steady_clock::duration stall_recheck() const;
  // How long a watchdog that could not interrupt its plane listens for the other stuck ranks'
  // probes: their watchdogs fire within one watchdog period (0.1 s) of the moment each entered
  // the stuck cycle, and on a loaded node a rank may enter it well after the others (a thread
  // descheduled, a slow step): a twentieth of the timeout, at least 0.3 s and at most 3 s.
  static double probe_window_seconds(double timeout_seconds) { return std::clamp(timeout_seconds / 20, 0.3, 3.0); }
  bool cycle_worth_running(Backend& plane) KOROVOD_REQUIRES(engine_.cycle_mu_);
  void wait_for_news(Backend& plane, std::chrono::steady_clock::duration cycle);
  bool loop_done() const;
  void record_fatal(const Status& status);
  void on_watchdog_timeout();

  Engine engine_;
  Env& env_ = engine_.env();  // the engine's time: every wait and deadline of the driver

  // Event mode: the global set's data plane, whose doorbell idle threads sleep on (null: timer
  // mode). Callers that may use it count themselves in callers_inside_ (CallerInside); shutdown
  // clears it and waits for them before the engine releases its process sets.
  std::atomic<Backend*> idle_plane_{nullptr};
  std::atomic<int> callers_inside_{0};
  struct CallerInside {
    explicit CallerInside(CycleDriver& d) : self(d) { self.callers_inside_.fetch_add(1); }
    ~CallerInside() { self.callers_inside_.fetch_sub(1); }
    CycleDriver& self;
  };
  std::atomic<bool> running_{false};
  std::atomic<bool> shutdown_requested_{false};
  std::atomic<std::thread::id> cycle_owner_{};  // the thread inside a cycle (callbacks may wait)
  mutable Mutex state_mu_;
  std::condition_variable state_cv_;  // loop exit, shutdown and new-work wake-ups
  bool inline_driving_ KOROVOD_GUARDED_BY(state_mu_) = false;  // a waiting caller runs the cycles; the background thread stands by
  bool loop_done_ KOROVOD_GUARDED_BY(state_mu_) = false;       // some cycle ended the engine (shutdown agreed, error, watchdog)
  bool cycle_suspended_ KOROVOD_GUARDED_BY(state_mu_) = false; // a cycle waits for a thread to resume it (the background thread's cue)
  // KOROVOD_INLINE_CYCLES and Engine::inline_safe(): recomputed whenever the process sets change.
  std::atomic<bool> inline_possible_{false};
  TimePoint last_cycle_start_ KOROVOD_GUARDED_BY(state_mu_){};  // paces the background thread
  TimePoint news_since_ KOROVOD_GUARDED_BY(state_mu_){};  // event mode: news first seen (reset per cycle)
  bool wake_now_ KOROVOD_GUARDED_BY(state_mu_) = false;  // wake_background: no caller will run the next cycle inline (reset per cycle)
  // A request queued since the loop last looked, and whether the last cycle had nothing to do:
  // an idle engine starts a cycle as soon as work arrives instead of sleeping out cycle_time.
  // Set by enqueue without state_mu_ when no wake-up is due (note_work); read under it.
  std::atomic<bool> work_queued_{false};
  bool engine_idle_ KOROVOD_GUARDED_BY(state_mu_) = true;
  Status fatal_ KOROVOD_GUARDED_BY(state_mu_);  // first background error, resurfaced on every later call
  std::atomic<bool> has_fatal_{false};          // fatal_ is set: enqueue looks without the lock
  bool loop_exited_ KOROVOD_GUARDED_BY(state_mu_) = false;
  std::unique_ptr<Watchdog> watchdog_;
  std::thread background_;
};

}  // namespace korovod
