// Per-process-set tensor queue (Horovod's TensorQueue): the table of submitted tensors by name
// and the requests not yet negotiated. A name already pending is refused.
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/message.h"
#include "core/thread_annotations.h"
#include "korovod/runtime.h"

namespace korovod {

struct TensorEntry {
  Request request;  // moves on to the negotiation when queued; the table keeps the rest
  TensorView input;
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
  std::optional<TensorEntry> take(const std::string& name);
  // take() for every name of a response under one lock; nullopt where the name is not queued
  // (a joined rank's share). The entries' requests have moved on to the negotiation.
  void take(const std::vector<std::string>& names, std::vector<std::optional<TensorEntry>>& out);
  std::vector<TensorEntry> take_all();
  // Some tensor has been handed to negotiation and not yet executed (waiting for other ranks).
  bool in_flight();

 private:
  std::mutex mu_;  // guards table_ and queue_
  std::unordered_map<std::string, TensorEntry> table_ KOROVOD_GUARDED_BY(mu_);
  std::vector<Request> queue_ KOROVOD_GUARDED_BY(mu_);
};

}  // namespace korovod
