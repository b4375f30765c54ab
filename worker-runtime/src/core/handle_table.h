// Handles of submitted operations: completion status, outputs the runtime owns, waiting.
// Completion is first-wins, so the watchdog can fail operations the stuck engine still holds.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "core/thread_annotations.h"
#include "korovod/runtime.h"

namespace korovod {

class HandleTable {
 public:
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
  Status wait(Handle handle, std::optional<double> timeout_seconds) const;
  // wait() that does not wait: the status once done (or the unknown-handle error), else nullopt.
  std::optional<Status> finished_status(Handle handle) const;
  Result<OpOutput> output(Handle handle) const;
  void release(Handle handle);

 private:
  struct State {
    bool done = false;
    bool completing = false;  // complete() is running the callback; done once it returns
    Status status;
    OpOutput output;
    std::vector<std::byte> owned;
    DoneCallback on_done;
  };
  std::shared_ptr<State> find(Handle handle) const KOROVOD_REQUIRES(mu_);

  mutable std::mutex mu_;  // guards states_, next_ and every State's fields
  mutable std::condition_variable done_cv_;
  std::unordered_map<Handle, std::shared_ptr<State>> states_ KOROVOD_GUARDED_BY(mu_);
  Handle next_ KOROVOD_GUARDED_BY(mu_) = 1;
};

}  // namespace korovod
