// Allreduce on one tensor in place (no copy), or on many through the fusion buffer: copy in
// with prescale, one backend allreduce, copy out with postscale; or, where the backend offers it
// (shared memory), on any number of tensors in place with the postscale folded in. Average is
// Sum with postscale 1/size (Horovod's MPI path), so joined ranks' zeros still count in the
// divisor.
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

// Backends that offer allreduce_many reduce the tensors in place and fold the postscale into
// their reduction: no fusion-buffer copies and no second pass over the outputs. A prescale still
// needs a scaled copy of the inputs, which the fusion buffer (or the output) provides.
bool in_place_many(const OpContext& ctx) {
  return ctx.backend.allreduce_many_offered() && ctx.response.prescale == 1.0;
}

Status allreduce_many_in_place(OpContext& ctx) {
  const Response& r = ctx.response;
  std::vector<const void*> sends(ctx.entries.size());
  std::vector<void*> recvs(ctx.entries.size());
  for (size_t i = 0; i < ctx.entries.size(); ++i) {
    sends[i] = ctx.entries[i].input.data;
    recvs[i] = ctx.entries[i].output.data;
  }
  ScopedActivity act(ctx, RequestType::kAllreduce);
  return ctx.backend.allreduce_many(sends, recvs, r.sizes, r.dtype, wire_op(r.op),
                                    effective_postscale(r, ctx.backend.size()));
}

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
  std::byte* buffer = fusion_buffer(ctx, total * elem);
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
    // A dummy's result shape was set by allocate_output. Otherwise the output's own shape (the
    // response's, checked by negotiation), moved rather than copied: no allocation per tensor,
    // and nothing below reads the views' shapes.
    if (!e.joined_dummy) e.result.shape = std::move(e.output.shape);
    e.result.data = e.output.data;
  }
  if (ctx.response.op == ReduceOp::kAdasum) return run_adasum(ctx);  // host tensors only (make_entry)
  if (ctx.response.device != kCpuDevice) return allreduce_on_device(ctx);
  if (in_place_many(ctx)) return allreduce_many_in_place(ctx);
  if (ctx.entries.size() == 1) return allreduce_single(ctx, ctx.entries[0], ctx.response.sizes[0]);
  return allreduce_fused(ctx);
}

}  // namespace korovod
