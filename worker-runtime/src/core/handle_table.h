// Handles of submitted operations: completion status, outputs the runtime owns, waiting.
// Completion is first-wins, so the watchdog can fail operations the stuck engine still holds.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <memory_resource>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "core/mutex.h"
#include "core/thread_annotations.h"
#include "korovod/env.h"
#include "korovod/runtime.h"

namespace korovod {

class HandleTable {
 public:
  // `env`: the time a timed wait() is measured on; it outlives the table.
  explicit HandleTable(Env& env) : env_(env) {}
  Handle create(DoneCallback on_done);
  // Storage owned by the handle for an output without a user allocator; valid until release().
  void* allocate_owned(Handle handle, size_t bytes);
  // Returns false when the handle was already completed (the first completion wins). The
  // handle's callback runs first; only then do poll/wait/output report it done.
  bool complete(Handle handle, Status status, OpOutput output = {});
  // complete() for the operations of one fused response: one lock round trip for all, their
  // callbacks in order, then all done at once with a single wake-up for their waiters.
  // `outputs` is empty or one per handle (moved from).
  void complete_many(const std::vector<Handle>& handles, const Status& status, std::vector<OpOutput>& outputs);
  void fail_all_pending(const Status& status);

  Result<bool> poll(Handle handle) const;
  // A handle released while a thread waits on it ends that wait with the unknown-handle error.
  Status wait(Handle handle, std::optional<double> timeout_seconds) const;
  // wait() that does not wait: the status once done (or the unknown-handle error), else nullopt.
  std::optional<Status> finished_status(Handle handle) const;
  Result<OpOutput> output(Handle handle) const;
  void release(Handle handle);
  // Nobody will wait for this handle: it is erased as soon as it is done (now, if it is), its
  // callback still runs. For callers that learn the outcome from the callback alone.
  void detach(Handle handle);

 private:
  struct State {
    bool done = false;
    bool completing = false;  // complete() is running the callback; done once it returns
    bool released = false;    // release() came while completing, or detach(): erased once done
    Status status;
    OpOutput output;
    std::vector<std::byte> owned;
    DoneCallback on_done;
  };
  // A state stays where it is while it is completing (release() then only marks it), so the
  // completers keep their pointers across the callbacks; others look it up again after every
  // unlocked stretch (a wait), as release() may erase it meanwhile.
  State* find(Handle handle) const KOROVOD_REQUIRES(mu_);
  void finish(Handle handle, State& state) KOROVOD_REQUIRES(mu_);  // done, or erased if released
  static Status unknown(Handle handle);

  mutable Mutex mu_;  // also guards every State's fields
  Env& env_;
  mutable std::condition_variable done_cv_;
  // States live in the map's nodes, which come from a pool: a training step creates and
  // releases hundreds of handles in bursts, which glibc's allocator serves slowly.
  std::pmr::unsynchronized_pool_resource pool_ KOROVOD_GUARDED_BY(mu_);
  std::pmr::unordered_map<Handle, State> states_ KOROVOD_GUARDED_BY(mu_){&pool_};
  Handle next_ KOROVOD_GUARDED_BY(mu_) = 1;
};

}  // namespace korovod
