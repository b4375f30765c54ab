// Allreduce on one tensor in place (no copy), or on many through the fusion buffer:
// copy in with prescale, one backend allreduce, copy out with postscale. Average is Sum with
// postscale 1/size (Horovod's MPI path), so joined ranks' zeros still count in the divisor.
// Device tensors are never fused (fuse_responses) and the backend does their scaling: the host
// cannot touch GPU memory.
#include <numeric>

#include "algorithms/algorithm.h"
#include "kernels/kernels.h"

namespace korovod {
namespace {

double effective_postscale(const Response& r, int size) {
  return r.op == ReduceOp::kAverage ? r.postscale / size : r.postscale;
}

ReduceOp wire_op(ReduceOp op) { return op == ReduceOp::kAverage ? ReduceOp::kSum : op; }

Status allreduce_single(OpContext& ctx, OpEntry& e, int64_t count) {
  const Response& r = ctx.response;
  const void* send = e.input.data;
  if (r.prescale != 1.0) {
    kernels::scale_copy(r.dtype, e.output.data, e.input.data, count, r.prescale);
    send = e.output.data;
  }
  {
    ScopedActivity act(ctx, RequestType::kAllreduce);
    KOROVOD_RETURN_IF_ERROR(ctx.backend.allreduce(send, e.output.data, count, r.dtype, wire_op(r.op)));
  }
  kernels::scale(r.dtype, e.output.data, count, effective_postscale(r, ctx.backend.size()));
  return Status::ok();
}

Status allreduce_fused(OpContext& ctx) {
  const Response& r = ctx.response;
  const int64_t elem = element_size(r.dtype);
  const int64_t total = std::accumulate(r.sizes.begin(), r.sizes.end(), int64_t{0});
  std::vector<std::string> names;
  for (const auto& e : ctx.entries) names.push_back(e.name);
  std::byte* buffer = ctx.fusion.get(r.device, total * elem, ctx.timeline, names);
  {
    ScopedActivity act(ctx, "MEMCPY_IN_FUSION_BUFFER");
    int64_t offset = 0;
    for (size_t i = 0; i < ctx.entries.size(); ++i) {
      kernels::scale_copy(r.dtype, buffer + offset * elem, ctx.entries[i].input.data, r.sizes[i], r.prescale);
      offset += r.sizes[i];
    }
  }
  {
    ScopedActivity act(ctx, RequestType::kAllreduce);
    KOROVOD_RETURN_IF_ERROR(ctx.backend.allreduce(buffer, buffer, total, r.dtype, wire_op(r.op)));
  }
  ScopedActivity act(ctx, "MEMCPY_OUT_FUSION_BUFFER");
  const double post = effective_postscale(r, ctx.backend.size());
  int64_t offset = 0;
  for (size_t i = 0; i < ctx.entries.size(); ++i) {
    kernels::scale_copy(r.dtype, ctx.entries[i].output.data, buffer + offset * elem, r.sizes[i], post);
    offset += r.sizes[i];
  }
  return Status::ok();
}

// One backend call per tensor; the backend folds the scales into its reduction.
Status allreduce_on_device(OpContext& ctx) {
  const Response& r = ctx.response;
  ScopedActivity act(ctx, RequestType::kAllreduce);
  for (size_t i = 0; i < ctx.entries.size(); ++i) {
    OpEntry& e = ctx.entries[i];
    KOROVOD_RETURN_IF_ERROR(ctx.backend.allreduce_scaled(e.input.data, e.output.data, r.sizes[i], r.dtype, r.op,
                                                         r.prescale, r.postscale));
  }
  return Status::ok();
}

}  // namespace

Status run_allreduce(OpContext& ctx) {
  for (size_t i = 0; i < ctx.entries.size(); ++i) {
    OpEntry& e = ctx.entries[i];
    if (e.joined_dummy) {  // zeros in, result discarded
      Result<void*> buf = allocate_output(ctx, e, ctx.response.shapes[i]);
      if (!buf.is_ok()) return buf.status();
      std::fill(e.dummy.begin(), e.dummy.end(), std::byte{0});
      e.input.data = e.output.data = *buf;
    }
    e.result.shape = ctx.response.shapes[i];
    e.result.data = e.output.data;
  }
  if (ctx.response.device != kCpuDevice) return allreduce_on_device(ctx);
  if (ctx.entries.size() == 1) return allreduce_single(ctx, ctx.entries[0], ctx.response.sizes[0]);
  return allreduce_fused(ctx);
}

}  // namespace korovod
