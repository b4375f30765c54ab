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

// One buffer per device, allocated on first use at max(threshold, need) and kept.
class FusionBufferManager {
 public:
  explicit FusionBufferManager(int64_t threshold_bytes) : threshold_(threshold_bytes) {}
  // `names` get an INIT_FUSION_BUFFER timeline activity when the buffer is (re)allocated.
  std::byte* get(int device, int64_t bytes, Timeline& timeline, const std::vector<std::string>& names);

 private:
  int64_t threshold_;
  std::map<int, std::unique_ptr<std::byte[]>> buffers_;
  std::map<int, int64_t> capacity_;
};

}  // namespace korovod
