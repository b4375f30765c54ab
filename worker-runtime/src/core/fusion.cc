#include "core/fusion.h"

#include <algorithm>
#include <numeric>

namespace korovod {
namespace {

bool fusable(const Response& a, const Response& b) {
  return a.type == ResponseType::kAllreduce && b.type == a.type && a.dtype == b.dtype &&
         a.device == b.device && a.op == b.op && a.prescale == b.prescale &&
         a.postscale == b.postscale;
}

void absorb(Response& into, Response& from) {
  for (auto& n : from.names) into.names.push_back(std::move(n));
  for (int64_t s : from.sizes) into.sizes.push_back(s);
  for (auto& s : from.shapes) into.shapes.push_back(std::move(s));
}

}  // namespace

int64_t response_bytes(const Response& response) {
  return std::accumulate(response.sizes.begin(), response.sizes.end(), int64_t{0}) *
         element_size(response.dtype);
}

std::vector<Response> fuse_responses(std::vector<Response> responses, int64_t threshold_bytes) {
  std::vector<Response> fused;
  std::vector<bool> used(responses.size(), false);
  for (size_t i = 0; i < responses.size(); ++i) {
    if (used[i]) continue;
    used[i] = true;
    Response head = std::move(responses[i]);
    // Device tensors are not fused: the fusion buffer is host memory (see allreduce.cc).
    if (head.type == ResponseType::kAllreduce && threshold_bytes > 0 && head.device == kCpuDevice) {
      int64_t total = response_bytes(head);
      for (size_t j = i + 1; j < responses.size(); ++j) {
        if (used[j] || !fusable(head, responses[j])) continue;
        int64_t bytes = response_bytes(responses[j]);
        if (total + bytes > threshold_bytes) continue;
        total += bytes;
        absorb(head, responses[j]);
        used[j] = true;
      }
    }
    fused.push_back(std::move(head));
  }
  return fused;
}

std::vector<ResponsePtr> FusionPlanner::plan(const std::vector<ResponsePtr>& responses, int64_t threshold_bytes) {
  if (responses.size() <= 1) return responses;
  for (auto it = recent_.begin(); it != recent_.end(); ++it) {
    if (it->threshold != threshold_bytes || it->key != responses) continue;
    std::rotate(recent_.begin(), it, it + 1);
    return recent_.front().fused;
  }
  std::vector<Response> copies;
  copies.reserve(responses.size());
  for (const ResponsePtr& r : responses) copies.push_back(*r);
  Layout layout{responses, threshold_bytes, {}};
  for (Response& r : fuse_responses(std::move(copies), threshold_bytes)) {
    layout.fused.push_back(std::make_shared<const Response>(std::move(r)));
  }
  if (recent_.size() == kRemembered) recent_.pop_back();
  recent_.push_front(std::move(layout));
  return recent_.front().fused;
}

bool FusionBufferManager::needs_allocation(int device, int64_t bytes) const {
  auto it = capacity_.find(device);
  return it == capacity_.end() || it->second < bytes;
}

std::byte* FusionBufferManager::get(int device, int64_t bytes) {
  int64_t& cap = capacity_[device];
  if (cap < bytes || !buffers_[device]) {
    cap = std::max({threshold_, bytes, int64_t{64}});
    buffers_[device].reset(new std::byte[static_cast<size_t>(cap)]);
  }
  return buffers_[device].get();
}

}  // namespace korovod
