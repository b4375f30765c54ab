// Reducescatter: dim0 split as Horovod does (ranks below dim0 % size get one extra row); the
// prescaled copy goes through the fusion buffer; Average is Sum with postscale 1/size. For device
// tensors the backend does the scaling (the fusion buffer is host memory).
#include "algorithms/algorithm.h"
#include "kernels/kernels.h"

namespace korovod {

std::vector<int64_t> reducescatter_rows(int64_t dim0, int size) {
  std::vector<int64_t> rows(size, dim0 / size);
  for (int k = 0; k < dim0 % size; ++k) ++rows[k];
  return rows;
}

Status run_reducescatter(OpContext& ctx) {
  const Response& r = ctx.response;
  const int size = ctx.backend.size();
  for (size_t t = 0; t < ctx.entries.size(); ++t) {
    OpEntry& e = ctx.entries[t];
    const std::vector<int64_t>& shape = r.shapes[t];
    const int64_t row = row_elements(shape);
    std::vector<int64_t> rows = reducescatter_rows(shape[0], size);
    std::vector<int64_t> counts(size);
    for (int k = 0; k < size; ++k) counts[k] = rows[k] * row;
    if (r.device != kCpuDevice) {
      std::vector<int64_t> out_shape = shape;
      out_shape[0] = rows[ctx.backend.rank()];
      Result<void*> out = allocate_output(ctx, e, out_shape);
      if (!out.is_ok()) return out.status();
      ScopedActivity act(ctx, RequestType::kReducescatter);
      KOROVOD_RETURN_IF_ERROR(
          ctx.backend.reducescatter_scaled(e.input.data, *out, counts, r.dtype, r.op, r.prescale, r.postscale));
      continue;
    }
    const void* send = e.input.data;
    if (r.prescale != 1.0) {
      std::byte* buf = fusion_buffer(ctx, r.sizes[t] * element_size(r.dtype), &e);
      kernels::scale_copy(r.dtype, buf, e.input.data, r.sizes[t], r.prescale);
      send = buf;
    }
    std::vector<int64_t> out_shape = shape;
    out_shape[0] = rows[ctx.backend.rank()];
    Result<void*> out = allocate_output(ctx, e, out_shape);
    if (!out.is_ok()) return out.status();
    const ReduceOp op = r.op == ReduceOp::kAverage ? ReduceOp::kSum : r.op;
    {
      ScopedActivity act(ctx, RequestType::kReducescatter);
      KOROVOD_RETURN_IF_ERROR(ctx.backend.reducescatter(send, *out, counts, r.dtype, op));
    }
    const double post = r.op == ReduceOp::kAverage ? r.postscale / size : r.postscale;
    kernels::scale(r.dtype, *out, counts[ctx.backend.rank()], post);
  }
  return Status::ok();
}

}  // namespace korovod
