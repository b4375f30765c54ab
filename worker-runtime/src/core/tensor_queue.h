// Per-process-set tensor queue (Horovod's TensorQueue): the table of submitted tensors by name
// and the requests not yet negotiated. A name already pending is refused.
#pragma once

#include <memory_resource>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/message.h"
#include "core/mutex.h"
#include "core/thread_annotations.h"
#include "korovod/runtime.h"

namespace korovod {

struct TensorEntry {
  Request request;  // moves on to the negotiation when queued; the table keeps the rest
  TensorView input;  // shape: alltoall only (others' is request.shape)
  TensorView output;
  std::vector<int32_t> splits;
  OutputAllocator allocator;
  std::shared_ptr<const ReadyEvent> ready_event;
  Handle handle = 0;
};

class TensorQueue {
 public:
  // All or nothing: refuses the batch if any name is pending or repeated within it.
  Status add(std::vector<TensorEntry> entries);
  Status add(TensorEntry entry);  // one tensor: one hash of its name, no vectors
  std::vector<Request> pop_requests();
  // For every name of a response, under one lock: fn(i, entry) for each name i that is queued
  // (not a joined rank's share), to move out what it needs; the entry is then erased.
  // The entries' requests have moved on to the negotiation.
  template <typename Fn>
  void take_each(const std::vector<std::string>& names, Fn fn) {
    MutexLock lock(mu_);
    for (size_t i = 0; i < names.size(); ++i) {
      auto it = table_.find(names[i]);
      if (it == table_.end()) continue;
      fn(i, it->second);
      table_.erase(it);
    }
  }
  std::vector<TensorEntry> take_all();
  // Some tensor has been handed to negotiation and not yet executed (waiting for other ranks).
  bool in_flight();

 private:
  Mutex mu_;
  // The table's nodes come from a pool: a training step inserts and erases hundreds of them in
  // bursts, which glibc's allocator serves slowly (its per-thread cache holds 7 chunks a size;
  // the rest are freed with coalescing, and allocating them consolidates).
  std::pmr::unsynchronized_pool_resource pool_ KOROVOD_GUARDED_BY(mu_);
  std::pmr::unordered_map<std::string, TensorEntry> table_ KOROVOD_GUARDED_BY(mu_){&pool_};
  std::vector<Request> queue_ KOROVOD_GUARDED_BY(mu_);
};

}  // namespace korovod
