// Defaults of the Backend hooks that only device backends override, and of the transport's rank
// names (see transport.h).
#include <fmt/format.h>

#include <cstring>

#include "korovod/transport.h"

namespace korovod {

std::string TransportProvider::rank_name(int global_rank) const { return fmt::format("rank {}", global_rank); }

Status Backend::allreduce_scaled(const void*, void*, int64_t, DataType dtype, ReduceOp, double, double) {
  return Status::invalid_argument(
      fmt::format("the {} backend runs no device tensors (allreduce of {})", name(), dtype_name(dtype)));
}

Status Backend::reducescatter_scaled(const void*, void*, const std::vector<int64_t>&, DataType dtype, ReduceOp,
                                     double, double) {
  return Status::invalid_argument(
      fmt::format("the {} backend runs no device tensors (reducescatter of {})", name(), dtype_name(dtype)));
}

Status Backend::allreduce_many(const std::vector<const void*>& sends, const std::vector<void*>&,
                               const std::vector<int64_t>&, DataType dtype, ReduceOp, double) {
  return Status::invalid_argument(fmt::format("the {} backend offers no allreduce of many tensors in place "
                                              "({} tensors of {})", name(), sends.size(), dtype_name(dtype)));
}

Status Backend::allreduce_bits(std::vector<uint64_t>& bits, BitwiseOp) {
  return Status::invalid_argument(
      fmt::format("the {} backend offers no bit-vector allreduce ({} words asked)", name(), bits.size()));
}

Status Backend::copy(void* dst, const void* src, int64_t bytes) {
  if (bytes > 0) std::memcpy(dst, src, static_cast<size_t>(bytes));
  return Status::ok();
}

}  // namespace korovod
