// The cycle driver's waits: on a handle, with the caller-driven cycles behind it, and the
// event-driven waits of the background thread.
//
// A negotiation cycle is a collective matched by order across ranks, not by thread, so any one
// thread of a rank may run the next cycle. A synchronous collective (enqueue, then wait) would
// otherwise cost two thread hand-offs per rank: waking the background thread and waking the
// caller back, each a futex wake-up and a context switch that on a busy node costs more than the
// shared-memory data path itself. So the waiting thread runs the cycles while the background
// thread stands by (wait_for_next_cycle), and only when every wait in a cycle is one that gives
// up by itself on a dead or stuck peer (inline_safe(): control and data plane in shared memory,
// and no device tensor submitted so far: NCCL waits do not give up by themselves), since a
// caller stuck in a collective could not be released by the watchdog as a waiting caller is. A
// device tensor enqueued while a caller is already driving runs on that caller's thread
// (NcclBackend sets its device per call); if its operation is still pending then (other ranks
// have not submitted it yet), it hands pacing back to the background thread and blocks as
// before. Enqueue then only marks work queued without waking the background thread: whoever
// waits drives it, poll() wakes it, and its timer picks up the rest within one cycle time
// (Horovod's own latency for an operation nobody waits on).
//
// Event mode (the global set negotiates on shared memory, which offers an idle doorbell): a
// cycle runs only when it has something to do, and whichever thread would run it sleeps on the
// doorbell meanwhile. Horovod cycles every cycle time whether or not anything is pending; on a
// node whose cores all train, that costs each rank a wake-up per cycle time, and a rank waiting
// for a slower one spins through every round. Here a rank that starts a round rings the peers
// asleep on their doorbells (ShmBackend::allreduce_bits), an enqueue rings its own rank's
// (once per burst), and an idle rank uses no CPU at all. A waiting caller keeps driving for as
// long as its operation is pending, asleep between rounds, so it completes on its own thread
// however late the other ranks come.
//
// A timed wait returns by its deadline (Python waits in slices so that Ctrl-C gets through): the
// caller waits for the cycle lock only until then and stops between cycles once it passed; a
// tensor whose ready event is still not ready then makes it leave the cycle half done
// (Engine::cycle_, resumed at that response by the background thread or the next waiter).
// Not cut short: a collective the caller has entered whose peers are late (a round, a data
// collective) -- it cannot change threads part way; the shared-memory waits bound it by
// KOROVOD_COLLECTIVE_TIMEOUT_SECONDS.
#include <chrono>

#include "core/cycle_driver.h"

namespace korovod {
namespace {

using Steady = std::chrono::steady_clock;

// Timer mode: back-to-back cycles a waiting caller runs before handing pacing back. Two ranks
// that submit at about the same time match within one or two cycles; more only burns CPU in a
// stall.
constexpr int kEagerCycles = 4;
// Event mode: idle threads wake this often only to look again (no cycle).
constexpr auto kIdleRecheck = std::chrono::seconds(1);
// Event mode with tensors waiting for other ranks: a round at least this often. A peer that
// stops (SIGSTOP, a hang) before it submits leaves this rank asleep with nothing to wake it; only
// a round it fails to answer shows it, and the collective timeout counts from that round's start.
// So this period adds to the failure bound KOROVOD_COLLECTIVE_TIMEOUT_SECONDS + 0.5 s
// (docs/runtime-config.md "Failure bounds"; rt_elastic_idle_stop); a busy peer's background
// thread answers such a round in microseconds.
constexpr double kPendingRecheckSeconds = 0.25;

double seconds(Steady::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

Steady::duration CycleDriver::stall_recheck() const {
  // With tensors waiting for other ranks, a cycle this often anyway: the coordinator's own
  // period for looking at stalls (Coordinator::stall_check_due), at most kPendingRecheckSeconds.
  const Config& config = engine_.config();
  double period = kPendingRecheckSeconds;
  if (config.stall_check_enabled) {
    period = std::min(period, config.stall_warning_seconds / 4);
    if (config.stall_shutdown_seconds > 0) period = std::min(period, config.stall_shutdown_seconds / 4);
  }
  return std::chrono::duration_cast<Steady::duration>(std::chrono::duration<double>(std::max(period, 1e-3)));
}

bool CycleDriver::has_news() const {
  return work_queued_.load() || engine_.has_news();
}

bool CycleDriver::cycle_worth_running(Backend& plane) {
  if (engine_.cycle_in_progress() || plane.control_round_pending()) return true;  // one left half done
  MutexLock lock(state_mu_);
  return has_news() || (!engine_idle_ && env_.now() >= last_cycle_start_ + stall_recheck());
}

void CycleDriver::wait_for_news(Backend& plane, Steady::duration cycle) {
  MutexLock lock(state_mu_);
  while (!shutdown_requested_.load() && !loop_done_) {
    const uint64_t token = plane.idle_token();  // before looking: whatever comes later rings
    if (inline_driving_) {
      // The driving caller answers rounds and news itself (and notifies this thread if it stops
      // with its operation still pending). Asleep on the doorbell, this thread hears the rounds
      // that come after the caller stopped; one the caller has yet to answer would cut that
      // sleep short at once, so meanwhile look again every cycle time.
      if (plane.control_round_pending()) {
        env_.wait_for(state_cv_, lock, cycle);
      } else {
        lock.unlock();
        plane.idle_wait(token, seconds(kIdleRecheck));
        lock.lock();
      }
      continue;
    }
    if (cycle_suspended_) return;  // a caller left a cycle half done: carry on with it at once
    const auto now = env_.now();
    if (has_news()) {
      // As on the timer: an idle engine starts at once for new work (but leaves a caller that
      // will run it inline a cycle time first, so a burst of tensors is not split -- even when
      // another rank already waits in a round), one with tensors in flight keeps the cycle time
      // since its last cycle so that tensors arriving together still fuse.
      if (news_since_ == Steady::time_point{}) news_since_ = now;
      const auto start = !engine_idle_                      ? last_cycle_start_ + cycle
                         : inline_possible_ && !wake_now_ ? news_since_ + cycle
                                                           : now;
      if (now >= start) return;
      env_.wait_until(state_cv_, lock, start);
      continue;
    }
    if (plane.control_round_pending()) return;  // another rank waits in a round for this one
    Steady::duration sleep = kIdleRecheck;
    if (!engine_idle_) {
      const auto recheck = last_cycle_start_ + stall_recheck();
      if (now >= recheck) return;
      sleep = recheck - now;
    }
    lock.unlock();
    plane.idle_wait(token, seconds(sleep));
    lock.lock();
  }
}

Result<bool> CycleDriver::poll(Handle handle) {
  CallerInside inside(*this);
  Result<bool> done = engine_.handles().poll(handle);
  if (done.is_ok() && !*done) wake_background();
  return done;
}

Status CycleDriver::wait(Handle handle, std::optional<double> timeout_seconds) {
  // A fused response completes all its handles at once, so after the first wait of a step the
  // others are usually done already: one lock, no cycle driving, no clock read.
  HandleTable& handles = engine_.handles();
  if (std::optional<Status> finished = handles.finished_status(handle)) return *std::move(finished);
  const auto deadline = timeout_seconds ? env_.deadline_after_seconds(*timeout_seconds) : Steady::time_point::max();
  if (engine_.config().inline_cycles && cycle_owner_.load() != std::this_thread::get_id()) {
    CallerInside inside(*this);
    drive_cycles(handle, deadline);
  }
  // Enqueued after the engine stopped (another rank's shutdown ended it: an elastic reset after
  // that rank's failure), the operation never runs: it fails rather than waits forever.
  bool exited = false;
  {
    MutexLock lock(state_mu_);
    exited = loop_exited_;
  }
  if (exited) {
    const Status fatal = fatal_error();
    handles.complete(handle, fatal.is_ok() ? Status::aborted("korovod has been shut down: another rank's shutdown "
                                                              "ended the engine before this operation ran")
                                            : fatal);
  }
  if (!timeout_seconds) return handles.wait(handle, std::nullopt);
  const double left = std::chrono::duration<double>(deadline - env_.now()).count();
  return handles.wait(handle, left > 0 ? left : 0.0);
}

void CycleDriver::drive_cycles(Handle handle, Steady::time_point deadline) {
  {
    MutexLock lock(state_mu_);
    if (inline_driving_ || loop_done_ || loop_exited_ || !running_.load()) return;
    inline_driving_ = true;
  }
  bool pending = true;
  bool suspended = false;  // this thread left a cycle half done for another to finish
  // Bounded by the caller's deadline: the background thread may be in a long cycle (a ready
  // event not ready yet, a peer that is slow to join).
  if (inline_possible_.load() && lock_cycle_until(deadline)) {
    TimedMutexLock cycle(engine_.cycle_mu_, std::adopt_lock);
    Backend* plane = idle_plane_.load();
    for (int n = 0;; ++n) {
      Result<bool> done = engine_.handles().poll(handle);
      pending = done.is_ok() && !*done;
      const auto now = env_.now();
      // inline_possible_: a device tensor came meanwhile; from now on the background thread
      // runs the cycles (see inline_safe()).
      if (!pending || loop_done() || shutdown_requested_.load() || now >= deadline || !inline_possible_.load()) break;
      if (!plane && n >= kEagerCycles) break;
      // Event mode: not even a first round without something to negotiate -- a caller waiting
      // again (in slices, as Python does) for an operation already sent would start one per
      // slice, waking every rank, and would have to wait inside it for a peer whose cycle thread
      // is busy, past its own deadline.
      if (plane) {
        const uint64_t token = plane->idle_token();
        if (!cycle_worth_running(*plane)) {
          plane->idle_wait(token, seconds(std::min<Steady::duration>(stall_recheck(), deadline - now)));
          continue;
        }
      }
      const CycleEnd end = run_cycle_locked(deadline);
      suspended = end == CycleEnd::kSuspended;
      if (end != CycleEnd::kDone) break;
    }
    Result<bool> done = engine_.handles().poll(handle);
    pending = done.is_ok() && !*done;
  }
  {
    MutexLock lock(state_mu_);
    inline_driving_ = false;
  }
  // Only an operation still pending, or a cycle left half done, needs the background thread
  // now; otherwise its timer will do. Not news: an operation already sent needs no round.
  if (pending || suspended) wake_background();
}

}  // namespace korovod
