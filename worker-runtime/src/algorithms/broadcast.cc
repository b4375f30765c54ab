// Broadcast from the response's root (a process-set rank) into every rank's output, in place.
// The root's copy into its output goes through the backend (device memory for GPU tensors).
#include "algorithms/algorithm.h"

namespace korovod {

Status run_broadcast(OpContext& ctx) {
  const Response& r = ctx.response;
  for (size_t t = 0; t < ctx.entries.size(); ++t) {
    OpEntry& e = ctx.entries[t];
    const int64_t bytes = r.sizes[t] * element_size(r.dtype);
    if (e.joined_dummy) {
      Result<void*> buf = allocate_output(ctx, e, r.shapes[t]);
      if (!buf.is_ok()) return buf.status();
      e.output.data = *buf;
    } else if (ctx.backend.rank() == r.root_rank && e.output.data != e.input.data && bytes > 0) {
      KOROVOD_RETURN_IF_ERROR(ctx.backend.copy(e.output.data, e.input.data, bytes));
    }
    e.result.data = e.output.data;
    e.result.shape = r.shapes[t];
    ScopedActivity act(ctx, RequestType::kBroadcast);
    KOROVOD_RETURN_IF_ERROR(ctx.backend.broadcast(e.output.data, bytes, r.root_rank));
  }
  return Status::ok();
}

}  // namespace korovod
