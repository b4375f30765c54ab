#include "core/cycle_driver.h"

#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>

namespace korovod {

CycleDriver::~CycleDriver() {
  if (watchdog_) watchdog_->stop();
}

Status CycleDriver::start() {
  KOROVOD_RETURN_IF_ERROR(engine_.start());
  inline_possible_ = engine_.config().inline_cycles && engine_.inline_safe();
  idle_plane_ = engine_.find_idle_plane();
  running_ = true;
  watchdog_ = std::make_unique<Watchdog>(env_, engine_.config().collective_timeout_seconds,
                                         [this] { on_watchdog_timeout(); });
  background_ = std::thread([self = shared_from_this()] { self->background_loop(); });
  return Status::ok();
}

void CycleDriver::wait_for_next_cycle() {
  const auto cycle = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double, std::milli>(engine_.cycle_time_ms()));
  if (Backend* plane = idle_plane_.load()) return wait_for_news(*plane, cycle);  // cycle_driver_wait.cc
  MutexLock lock(state_mu_);
  // Horovod sleeps the remainder of cycle_time since the last cycle start. We do the same while
  // tensors are pending (so tensors arriving together still fuse), but an engine with nothing
  // pending wakes for the first new request: a lone small tensor then waits for no timer, and
  // whatever arrives while that cycle runs is fused into the next one. While a waiting caller
  // drives the cycles (inline_driving_) this thread stands by, and afterwards counts its timer
  // from the caller's last cycle, so it does not add a cycle right behind the caller's.
  // The waits are timed even while a caller drives, so a caller that stops driving need not
  // wake this thread (a futex wake-up per operation is what inline cycles exist to avoid).
  while (!shutdown_requested_.load() && !loop_done_) {
    const auto now = env_.now();
    if (inline_driving_) {
      env_.wait_until(state_cv_, lock, now + cycle);
      continue;
    }
    if (cycle_suspended_) break;  // a caller left a cycle half done: carry on with it at once
    if (engine_idle_ && work_queued_) break;
    const auto next = last_cycle_start_ + cycle;
    if (now >= next) break;
    env_.wait_until(state_cv_, lock, next);
  }
}

bool CycleDriver::loop_done() const {
  MutexLock lock(state_mu_);
  return loop_done_;
}

bool CycleDriver::lock_cycle_until(TimePoint deadline) {
  if (deadline == TimePoint::max()) {
    engine_.cycle_mu_.lock();
    return true;
  }
  return engine_.cycle_mu_.try_lock_until(deadline);
}

CycleDriver::CycleEnd CycleDriver::run_cycle_locked(TimePoint give_up_at) {
  const bool resuming = engine_.cycle_in_progress();
  {
    MutexLock lock(state_mu_);
    cycle_suspended_ = false;
    if (!resuming) {
      last_cycle_start_ = env_.now();
      // This cycle takes whatever is queued now, whichever thread runs it; what is queued from
      // here on is news for the next one.
      work_queued_ = false;
      news_since_ = {};
      wake_now_ = false;
    }
  }
  cycle_owner_ = std::this_thread::get_id();
  if (!resuming) watchdog_->enter_cycle();  // a suspended cycle stays inside: peers may wait for it meanwhile
  const Engine::CycleResult result = engine_.run_cycle(give_up_at, shutdown_requested_.load());
  if (result.end != CycleEnd::kSuspended) watchdog_->leave_cycle();
  cycle_owner_ = std::thread::id{};
  if (result.sets_changed) inline_possible_ = engine_.config().inline_cycles && engine_.inline_safe();
  if (!result.error.is_ok()) record_fatal(result.error);
  {
    MutexLock lock(state_mu_);
    if (result.end == CycleEnd::kSuspended) {
      cycle_suspended_ = true;
      engine_idle_ = false;
    } else {
      // Idle after this cycle: no tensor is in negotiation (waiting for other ranks).
      engine_idle_ = result.idle;
    }
  }
  if (result.end == CycleEnd::kSuspended) {
    state_cv_.notify_all();
    ring_engine();
    return result.end;
  }
  if (result.end == CycleEnd::kDone && !watchdog_->fired()) return result.end;
  {
    MutexLock lock(state_mu_);
    loop_done_ = true;
  }
  state_cv_.notify_all();
  ring_engine();
  return CycleEnd::kStopped;
}

void CycleDriver::notify_work() {
  work_queued_ = true;
  wake_background();
}

void CycleDriver::wake_background() {
  {
    MutexLock lock(state_mu_);
    wake_now_ = true;
  }
  state_cv_.notify_all();
  ring_engine();
}

void CycleDriver::note_work() {
  // With inline cycles the thread that waits runs the cycle; waking the background thread here
  // would only make it race the caller for the cycle (see cycle_driver_wait.cc). Its timed waits
  // see the flag without a lock taken per enqueued tensor; asleep on the doorbell (event mode),
  // it is rung once for the first request since the last cycle and then leaves the waiting
  // caller a cycle time to run it, so callers that never wait are still served.
  if (!inline_possible_.load()) return notify_work();
  if (!work_queued_.exchange(true)) ring_engine();
}

void CycleDriver::ring_engine() {
  if (Backend* plane = idle_plane_.load()) plane->idle_wake();
}

void CycleDriver::background_loop() {
  const Config& config = engine_.config();
  if (!config.thread_affinity.empty()) {
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    CPU_SET(config.thread_affinity[engine_.world().local_rank % config.thread_affinity.size()], &cpus);
    pthread_setaffinity_np(pthread_self(), sizeof cpus, &cpus);
  }
  {
    MutexLock lock(state_mu_);
    last_cycle_start_ = env_.now();
  }
  while (true) {
    wait_for_next_cycle();
    TimedMutexLock cycle(engine_.cycle_mu_);  // a waiting caller may be finishing a cycle
    if (loop_done()) break;
    // Event mode: a caller that drove meanwhile may have run the cycle this thread woke for.
    if (Backend* plane = idle_plane_.load(); plane && !shutdown_requested_.load() && !cycle_worth_running(*plane)) {
      continue;
    }
    // Shutdown is negotiated like any request: the cycle carries it to the other ranks.
    if (run_cycle_locked(TimePoint::max()) == CycleEnd::kStopped) break;
  }
  // A cycle left half done lets go of its operations (their handles are failed below with the
  // rest) -- unless a caller is still inside one, stuck with a dead peer: not waited for.
  if (engine_.cycle_mu_.try_lock()) {
    TimedMutexLock cycle(engine_.cycle_mu_, std::adopt_lock);
    engine_.abandon_cycle();
  }
  Status final_status = fatal_error();
  const Status gone = final_status.is_ok() ? Status::aborted("korovod has been shut down") : final_status;
  engine_.drain(gone);
  {
    MutexLock lock(state_mu_);
    loop_exited_ = true;
  }
  // What was enqueued while the above ran: a wait from now on sees loop_exited_ (wait()).
  engine_.handles().fail_all_pending(gone);
  state_cv_.notify_all();
}

void CycleDriver::record_fatal(const Status& status) {
  {
    MutexLock lock(state_mu_);
    if (!fatal_.is_ok()) return;
    fatal_ = status;
    has_fatal_.store(true, std::memory_order_release);
  }
  engine_.log().log(LogLevel::kError, "background loop stopped: {}", status.message());
}

Status CycleDriver::fatal_error() const {
  MutexLock lock(state_mu_);
  return fatal_;
}

void CycleDriver::on_watchdog_timeout() {
  // A plane that knows which peers its collective waits for (TCP, shared memory) ends that wait
  // with an error naming the ranks that never answered, and the background loop stops with it:
  // given a moment for that (the plane first collects its peers' failure notices,
  // Mesh::kSettleSeconds). The error below, which names no rank, is what is left when no plane
  // could say.
  const Config& config = engine_.config();
  const std::string position = engine_.cycle_position();  // before an interrupted wait ends the cycle
  const std::string why = fmt::format("the collective timeout ({} s, KOROVOD_COLLECTIVE_TIMEOUT_SECONDS) passed",
                                      config.collective_timeout_seconds);
  std::string lost;
  if (engine_.interrupt_waits(why)) {
    MutexLock lock(state_mu_);
    const TimePoint deadline = env_.deadline_after(std::chrono::seconds(1));
    while (!loop_done_ && fatal_.is_ok() && !env_.wait_until(state_cv_, lock, deadline)) {
    }
  } else {
    // A plane that cannot be interrupted (MPI): the loop stays stuck, but the ranks whose loops
    // are stuck too answer each other's probes; the one that does not is named.
    lost = engine_.silent_peers(probe_window_seconds(config.collective_timeout_seconds));
  }
  record_fatal(Status::aborted(fmt::format(
      "a collective of the background loop did not complete within {} s "
      "(KOROVOD_COLLECTIVE_TIMEOUT_SECONDS): {}{}; all pending operations failed",
      config.collective_timeout_seconds, lost.empty() ? "a peer rank has probably died or stopped" : lost,
      position.empty() ? "" : fmt::format("; this rank waits in {}", position))));
  engine_.fail_pending(fatal_error());  // the plane's error, when it came first
  if (config.abort_on_collective_timeout) engine_.abort_job(1);
}

Status CycleDriver::shutdown() {
  if (!running_.exchange(false)) return fatal_error();
  shutdown_requested_ = true;
  state_cv_.notify_all();
  ring_engine();  // the sets are still there: the engine is running until it has exited
  bool exited = false;
  {
    MutexLock lock(state_mu_);
    auto done = [&]() KOROVOD_REQUIRES(state_mu_) { return loop_exited_; };
    const double timeout = engine_.config().collective_timeout_seconds;
    if (timeout > 0) {
      const TimePoint deadline = env_.deadline_after_seconds(timeout + 1.0);
      while (!done() && !env_.wait_until(state_cv_, lock, deadline)) {
      }
      exited = done();
    } else {
      state_cv_.wait(lock, done);
      exited = true;
    }
  }
  watchdog_->stop();
  engine_.timeline().stop();
  if (!exited) {
    // Stuck inside a collective with a dead peer: abandon the thread (it keeps this object
    // alive) and leave MPI as it is; the process is expected to exit with the error.
    background_.detach();
    record_fatal(Status::aborted("shutdown: the background thread is stuck in a collective"));
    return fatal_error();
  }
  background_.join();
  idle_plane_ = nullptr;
  while (callers_inside_.load() > 0) std::this_thread::yield();  // done with the old plane
  engine_.release();
  return fatal_error();
}

// ---- the caller's side: checked here (fatal error, running), queued by the engine ----

Result<ProcessSet*> CycleDriver::set_for_enqueue(int set_id, std::shared_ptr<ProcessSet>& hold) {
  if (has_fatal_.load(std::memory_order_acquire)) return fatal_error();  // no lock per tensor otherwise
  if (!running_) return Status::aborted("korovod is not running (shut down or not initialised)");
  return engine_.set_for_enqueue(set_id, hold);
}

void CycleDriver::after_enqueue() {
  if (inline_possible_.load(std::memory_order_relaxed) && engine_.device_tensors_seen()) inline_possible_ = false;
  note_work();
}

Result<Handle> CycleDriver::enqueue_one(CollectiveArgs&& args) {
  CallerInside inside(*this);  // note_work may ring the global set's plane
  std::shared_ptr<ProcessSet> hold;
  Result<ProcessSet*> set = set_for_enqueue(args.process_set, hold);
  if (!set.is_ok()) return set.status();
  Result<Handle> h = engine_.enqueue_one(**set, std::move(args));
  if (h.is_ok()) after_enqueue();
  return h;
}

Result<std::vector<Handle>> CycleDriver::enqueue(std::vector<CollectiveArgs> args) {
  CallerInside inside(*this);  // note_work may ring the global set's plane
  if (args.empty()) return std::vector<Handle>{};
  std::shared_ptr<ProcessSet> hold;
  Result<ProcessSet*> set = set_for_enqueue(args[0].process_set, hold);
  if (!set.is_ok()) return set.status();
  Result<std::vector<Handle>> handles = engine_.enqueue(**set, std::move(args));
  if (handles.is_ok()) after_enqueue();
  return handles;
}

void CycleDriver::wake_for_set_change() {
  // A cycle of the global set carries it (event mode: nothing else would start one).
  CallerInside inside(*this);
  if (running_.load()) ring_engine();
}

Result<int> CycleDriver::add_process_set(std::vector<int> ranks) {
  KOROVOD_RETURN_IF_ERROR(fatal_error());
  KOROVOD_RETURN_IF_ERROR(engine_.check_new_process_set(ranks));
  if (!running_) return Status::aborted("korovod is not running");
  SetChange change;
  change.add = true;
  change.ranks = std::move(ranks);
  std::future<Result<int>> done = engine_.process_sets().submit_change(std::move(change));
  wake_for_set_change();
  return done.get();
}

Status CycleDriver::remove_process_set(int id) {
  KOROVOD_RETURN_IF_ERROR(fatal_error());
  KOROVOD_RETURN_IF_ERROR(engine_.check_removable_process_set(id));
  if (!running_) return Status::aborted("korovod is not running");
  SetChange change;
  change.add = false;
  change.id = id;
  std::future<Result<int>> done = engine_.process_sets().submit_change(std::move(change));
  wake_for_set_change();
  return done.get().status();
}

}  // namespace korovod
