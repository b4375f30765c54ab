// Allgather: dim0 may differ per rank (the response carries every rank's dim0); the output is
// their concatenation along dim0. A joined rank contributes zero rows.
#include "algorithms/algorithm.h"

namespace korovod {

Status run_allgather(OpContext& ctx) {
  const Response& r = ctx.response;
  const int size = ctx.backend.size();
  for (size_t t = 0; t < ctx.entries.size(); ++t) {
    OpEntry& e = ctx.entries[t];
    const std::vector<int64_t>& shape = r.shapes[t];
    const int64_t row_bytes = row_elements(shape) * element_size(r.dtype);
    std::vector<int64_t> recv_bytes(size);
    int64_t rows = 0;
    for (int k = 0; k < size; ++k) {
      const int64_t dim0 = r.sizes[t * size + k];
      recv_bytes[k] = dim0 * row_bytes;
      rows += dim0;
    }
    std::vector<int64_t> out_shape = shape;
    out_shape[0] = rows;
    Result<void*> out = allocate_output(ctx, e, out_shape);
    if (!out.is_ok()) return out.status();
    const void* send = e.joined_dummy ? *out : e.input.data;
    ScopedActivity act(ctx, RequestType::kAllgather);
    KOROVOD_RETURN_IF_ERROR(ctx.backend.allgatherv(send, recv_bytes[ctx.backend.rank()], *out, recv_bytes));
  }
  return Status::ok();
}

}  // namespace korovod
