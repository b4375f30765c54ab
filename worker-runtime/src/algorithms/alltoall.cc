// Alltoall with optional splits (rows sent to each rank; default: dim0 / size each). The splits
// are exchanged first so each rank can size its output; received splits are returned.
#include "algorithms/algorithm.h"

namespace korovod {

Status run_alltoall(OpContext& ctx) {
  const Response& r = ctx.response;
  const int size = ctx.backend.size();
  for (size_t t = 0; t < ctx.entries.size(); ++t) {
    OpEntry& e = ctx.entries[t];
    std::vector<int32_t> splits = e.splits;
    if (splits.empty()) splits.assign(size, static_cast<int32_t>(e.input.shape[0] / size));
    std::vector<int32_t> received(size);
    std::vector<int64_t> four(size, sizeof(int32_t));
    {
      ScopedActivity act(ctx, RequestType::kAlltoall);
      KOROVOD_RETURN_IF_ERROR(ctx.backend.alltoallv(splits.data(), four, received.data(), four));
    }
    const int64_t row_bytes = row_elements(e.input.shape) * element_size(r.dtype);
    std::vector<int64_t> send_bytes(size), recv_bytes(size);
    int64_t rows = 0;
    for (int k = 0; k < size; ++k) {
      send_bytes[k] = splits[k] * row_bytes;
      recv_bytes[k] = received[k] * row_bytes;
      rows += received[k];
    }
    std::vector<int64_t> out_shape = e.input.shape;
    out_shape[0] = rows;
    Result<void*> out = allocate_output(ctx, e, out_shape);
    if (!out.is_ok()) return out.status();
    e.result.received_splits = received;
    ScopedActivity act(ctx, RequestType::kAlltoall);
    KOROVOD_RETURN_IF_ERROR(ctx.backend.alltoallv(e.input.data, send_bytes, *out, recv_bytes));
  }
  return Status::ok();
}

}  // namespace korovod
