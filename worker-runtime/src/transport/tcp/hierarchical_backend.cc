#include "transport/tcp/hierarchical_backend.h"

#include <algorithm>

namespace korovod::tcp {

Status HierarchicalBackend::allreduce(const void* send, void* recv, int64_t count, DataType dtype, ReduceOp op) {
  if (count == 0) return Status::ok();
  const int n = local_->size(), me = local_->rank();
  const int64_t elem = element_size(dtype);
  const int64_t per = (count + n - 1) / n;
  std::vector<int64_t> counts(static_cast<size_t>(n)), bytes(static_cast<size_t>(n));
  for (int j = 0; j < n; ++j) {
    counts[j] = std::clamp<int64_t>(count - per * j, 0, per);
    bytes[j] = counts[j] * elem;
  }
  if (shard_.size() < static_cast<size_t>(std::max<int64_t>(1, bytes[me]))) shard_.resize(static_cast<size_t>(std::max<int64_t>(1, bytes[me])));
  KOROVOD_RETURN_IF_ERROR(local_->reducescatter(send, shard_.data(), counts, dtype, op));
  KOROVOD_RETURN_IF_ERROR(cross_->allreduce(shard_.data(), shard_.data(), counts[me], dtype, op));
  return local_->allgatherv(shard_.data(), bytes[me], recv, bytes);
}

}  // namespace korovod::tcp
