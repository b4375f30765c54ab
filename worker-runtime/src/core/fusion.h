// Tensor fusion (Horovod's FuseResponses) and the persistent fusion buffer.
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "core/message.h"
#include "core/timeline.h"

namespace korovod {

// Bytes a single- or multi-tensor allreduce response moves.
int64_t response_bytes(const Response& response);

// Greedy, in order: each allreduce response absorbs the later ones with the same type, dtype,
// device, op and scales while the total stays within `threshold_bytes` (look-ahead skips the
// ones that do not match or do not fit, as Horovod does). Other types and device (GPU) tensors
// are never fused. Every rank
// runs this on the same list, so the fused layout is identical everywhere.
std::vector<Response> fuse_responses(std::vector<Response> responses, int64_t threshold_bytes);

// fuse_responses for a cycle's responses, remembering the last few layouts: a training step
// submits the same cached tensors every step, so the same cached responses come back (the same
// objects, shared with the response cache) and their fused layout -- names, sizes and shapes of
// hundreds of tensors -- is reused instead of rebuilt and copied every cycle. A remembered key
// holds its responses, so no other response can take one of their addresses meanwhile; and
// every rank plans from the same list, so layouts stay identical across ranks.
class FusionPlanner {
 public:
  std::vector<ResponsePtr> plan(const std::vector<ResponsePtr>& responses, int64_t threshold_bytes);

 private:
  static constexpr size_t kRemembered = 4;
  struct Layout {
    std::vector<ResponsePtr> key;
    int64_t threshold = 0;
    std::vector<ResponsePtr> fused;
  };
  std::deque<Layout> recent_;  // most recently used first
};

// One buffer per device, allocated on first use at max(threshold, need) and kept.
class FusionBufferManager {
 public:
  explicit FusionBufferManager(int64_t threshold_bytes) : threshold_(threshold_bytes) {}
  // Whether get() would (re)allocate: its callers then mark INIT_FUSION_BUFFER on the timeline.
  bool needs_allocation(int device, int64_t bytes) const;
  std::byte* get(int device, int64_t bytes);

 private:
  int64_t threshold_;
  std::map<int, std::unique_ptr<std::byte[]>> buffers_;
  std::map<int, int64_t> capacity_;
};

}  // namespace korovod
