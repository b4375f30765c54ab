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

std::byte* FusionBufferManager::get(int device, int64_t bytes, Timeline& timeline,
                                    const std::vector<std::string>& names) {
  int64_t& cap = capacity_[device];
  if (cap < bytes || !buffers_[device]) {
    for (const auto& n : names) timeline.activity_start(n, "INIT_FUSION_BUFFER");
    cap = std::max({threshold_, bytes, int64_t{64}});
    buffers_[device].reset(new std::byte[static_cast<size_t>(cap)]);
    for (const auto& n : names) timeline.activity_end(n);
  }
  return buffers_[device].get();
}

}  // namespace korovod
