#include <fmt/format.h>

#include "algorithms/algorithm.h"

namespace korovod {

Result<void*> allocate_output(OpContext& ctx, OpEntry& entry, std::vector<int64_t> shape) {
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  const size_t bytes = static_cast<size_t>(numel) * element_size(ctx.response.dtype);
  void* data = nullptr;
  if (entry.joined_dummy) {
    entry.dummy.resize(bytes == 0 ? 1 : bytes);
    data = entry.dummy.data();
  } else if (entry.allocator) {
    Result<void*> allocated = entry.allocator(shape);
    if (!allocated.is_ok()) return allocated.status();
    data = *allocated;
  } else {
    data = ctx.handles.allocate_owned(entry.handle, bytes);
  }
  if (data == nullptr && bytes > 0) {
    return Status::invalid_argument(fmt::format("could not allocate the output of '{}'", entry.name));
  }
  entry.result.data = data;
  entry.result.shape = std::move(shape);
  return data;
}

int64_t row_elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (size_t i = 1; i < shape.size(); ++i) n *= shape[i];
  return n;
}

namespace {

std::byte* fusion_buffer_of(OpContext& ctx, int device, int64_t bytes, const OpEntry* only) {
  if (!ctx.timeline.active() || !ctx.fusion.needs_allocation(device, bytes)) return ctx.fusion.get(device, bytes);
  auto each = [&](auto fn) {
    if (only) return fn(*only);
    for (const auto& e : ctx.entries) fn(e);
  };
  each([&](const OpEntry& e) { ctx.timeline.activity_start(e.name, "INIT_FUSION_BUFFER"); });
  std::byte* buffer = ctx.fusion.get(device, bytes);
  each([&](const OpEntry& e) { ctx.timeline.activity_end(e.name); });
  return buffer;
}

}  // namespace

std::byte* fusion_buffer(OpContext& ctx, int64_t bytes, const OpEntry* only) {
  return fusion_buffer_of(ctx, ctx.response.device, bytes, only);
}

std::byte* host_fusion_buffer(OpContext& ctx, int64_t bytes) {
  return fusion_buffer_of(ctx, kCpuDevice, bytes, nullptr);
}

std::string backend_activity(const Backend& backend, RequestType type) {
  // Horovod's activity names: MPI_ALLREDUCE, MPI_BCAST, NCCL_ALLGATHER, ...
  return fmt::format("{}_{}", backend.name(),
                     type == RequestType::kBroadcast ? std::string_view("BCAST") : request_type_name(type));
}

ScopedActivity::ScopedActivity(OpContext& ctx, std::string_view activity) : ctx_(ctx) {
  if (!ctx_.timeline.active()) return;
  recorded_ = true;
  const std::string name(activity);
  for (const auto& e : ctx_.entries) ctx_.timeline.activity_start(e.name, name);
}

ScopedActivity::ScopedActivity(OpContext& ctx, RequestType backend_op) : ctx_(ctx) {
  if (!ctx_.timeline.active()) return;
  recorded_ = true;
  const std::string name = backend_activity(ctx_.backend, backend_op);
  for (const auto& e : ctx_.entries) ctx_.timeline.activity_start(e.name, name);
}

ScopedActivity::~ScopedActivity() {
  if (!recorded_) return;
  for (const auto& e : ctx_.entries) ctx_.timeline.activity_end(e.name);
}

}  // namespace korovod
