// Waiting on a handle, and the caller-driven cycles behind it.
//
// A negotiation cycle is a collective matched by order across ranks, not by thread, so any one
// thread of a rank may run the next cycle. A synchronous collective (enqueue, then wait) would
// otherwise cost two thread hand-offs per rank: waking the background thread and waking the
// caller back, each a futex wake-up and a context switch that on a busy node costs more than the
// shared-memory data path itself. So the waiting thread runs the cycles while the background
// thread stands by (wait_for_next_cycle), for at most kEagerCycles back to back, and only when
// every wait in a cycle is one that gives up by itself on a dead or stuck peer (inline_safe():
// control and data plane in shared memory, and no device tensor submitted so far: NCCL waits do
// not give up by themselves), since a caller stuck in a collective could not be released by the
// watchdog as a waiting caller is. A device tensor enqueued while a caller is already driving
// runs on that caller's thread (NcclBackend sets its device per call); if its operation
// is still pending then (other ranks have not submitted it yet), it hands pacing back to the
// background thread and blocks as before. Enqueue then only marks work queued without waking the
// background thread: whoever waits drives it, poll() wakes it, and its timer picks up the rest
// within one cycle time (Horovod's own latency for an operation nobody waits on).
#include <chrono>

#include "core/runtime_impl.h"

namespace korovod {
namespace {

// Back-to-back cycles a waiting caller runs before handing pacing back. Two ranks that submit
// at about the same time match within one or two cycles; more only burns CPU in a stall.
constexpr int kEagerCycles = 4;

}  // namespace

bool RuntimeImpl::inline_safe() const {
  const auto sets = sets_.members_in_id_order();
  if (sets.empty()) return false;
  for (const auto& set : sets) {
    if (!set->control_on_data_plane) return false;
  }
  return !device_tensors_seen_.load();
}

Result<bool> RuntimeImpl::poll(Handle handle) {
  Result<bool> done = handles_.poll(handle);
  if (done.is_ok() && !*done) notify_work();
  return done;
}

Status RuntimeImpl::wait(Handle handle, std::optional<double> timeout_seconds) {
  // A fused response completes all its handles at once, so after the first wait of a step the
  // others are usually done already: one lock, no cycle driving, no clock read.
  if (std::optional<Status> finished = handles_.finished_status(handle)) return *std::move(finished);
  using Steady = std::chrono::steady_clock;
  const auto deadline =
      timeout_seconds ? Steady::now() + std::chrono::duration_cast<Steady::duration>(std::chrono::duration<double>(*timeout_seconds))
                      : Steady::time_point::max();
  if (config_.inline_cycles && cycle_owner_.load() != std::this_thread::get_id()) drive_cycles(handle, deadline);
  if (!timeout_seconds) return handles_.wait(handle, std::nullopt);
  const double left = std::chrono::duration<double>(deadline - Steady::now()).count();
  return handles_.wait(handle, left > 0 ? left : 0.0);
}

void RuntimeImpl::drive_cycles(Handle handle, std::chrono::steady_clock::time_point deadline) {
  {
    std::lock_guard lock(state_mu_);
    if (inline_driving_ || loop_done_ || loop_exited_ || !running_.load()) return;
    inline_driving_ = true;
  }
  if (!inline_possible_.load()) {
    {
      std::lock_guard lock(state_mu_);
      inline_driving_ = false;
      work_queued_ = true;
    }
    state_cv_.notify_all();
    return;
  }
  bool pending = true;
  {
    std::lock_guard cycle(cycle_mu_);  // the background thread may be finishing a cycle
    const bool timed = deadline != std::chrono::steady_clock::time_point::max();
    for (int n = 0; n < kEagerCycles && (!timed || std::chrono::steady_clock::now() < deadline); ++n) {
      Result<bool> done = handles_.poll(handle);
      pending = done.is_ok() && !*done;
      if (!pending || loop_done()) break;
      if (!run_cycle_locked()) break;
    }
    Result<bool> done = handles_.poll(handle);
    pending = done.is_ok() && !*done;
  }
  {
    std::lock_guard lock(state_mu_);
    inline_driving_ = false;
    if (pending) work_queued_ = true;
  }
  // Only an operation still pending needs the background thread now; otherwise its timer will do.
  if (pending) state_cv_.notify_all();
}

}  // namespace korovod
