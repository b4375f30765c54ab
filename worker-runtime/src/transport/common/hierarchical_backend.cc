#include "transport/common/hierarchical_backend.h"

#include <algorithm>

#include "kernels/kernels.h"

namespace korovod {

Status HierarchicalBackend::hierarchical(const void* send, void* recv, int64_t count, DataType dtype, ReduceOp op,
                                         double prescale, double postscale) {
  if (count == 0) return Status::ok();
  const int n = local_->size(), me = local_->rank();
  const int64_t elem = element_size(dtype);
  const int64_t per = (count + n - 1) / n;
  std::vector<int64_t> counts(static_cast<size_t>(n)), bytes(static_cast<size_t>(n));
  for (int j = 0; j < n; ++j) {
    counts[j] = std::clamp<int64_t>(count - per * j, 0, per);
    bytes[j] = counts[j] * elem;
  }
  // Shard `me` is reduced in place in the output (recv + its offset), the layout in-place NCCL
  // reduce-scatter and allgather use; the whole output is then filled by the allgather.
  auto* shard = static_cast<std::byte*>(recv) + std::min(count, per * me) * elem;
  // Average is a Sum at both levels, divided by the set's size once, on the host shard, with
  // the postscale (the CPU backend across hosts knows no Average). The prescale goes into the
  // device reduce-scatter, the only step that reads the input.
  const ReduceOp wire = op == ReduceOp::kAverage ? ReduceOp::kSum : op;
  const double post = op == ReduceOp::kAverage ? postscale / size() : postscale;
  KOROVOD_RETURN_IF_ERROR(prescale != 1.0 ? local_->reducescatter_scaled(send, shard, counts, dtype, wire, prescale, 1.0)
                                          : local_->reducescatter(send, shard, counts, dtype, wire));
  // A host backend's shard is host memory: allreduce it across hosts where it is. A device
  // backend's is staged to host memory and back.
  const bool stage = !local_->enabled(kCpuDevice) && bytes[me] > 0;
  std::byte* host = shard;
  if (stage) {
    if (host_shard_.size() < static_cast<size_t>(bytes[me])) host_shard_.resize(static_cast<size_t>(bytes[me]));
    host = host_shard_.data();
    KOROVOD_RETURN_IF_ERROR(local_->copy(host, shard, bytes[me]));
  }
  // Every rank with this local index joins the cross allreduce, even with an empty shard.
  KOROVOD_RETURN_IF_ERROR(cross_->allreduce(host, host, counts[me], dtype, wire));
  if (post != 1.0 && bytes[me] > 0) kernels::scale(dtype, host, counts[me], post);
  if (stage) KOROVOD_RETURN_IF_ERROR(local_->copy(shard, host, bytes[me]));
  return local_->allgatherv(shard, bytes[me], recv, bytes);
}

}  // namespace korovod
