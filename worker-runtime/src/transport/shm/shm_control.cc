// The negotiation's bit-vector allreduce on the members' control blocks: each rank writes its
// vector into its own area and bumps its kControl counter; once every peer's counter shows the
// round, each rank combines all areas. Two areas alternate between rounds: a rank can only be one
// round ahead of the slowest reader (starting round n + 1 needs every peer's post of round n,
// which each peer makes after reading round n - 1), so the area it writes is never being read.
// A rank that starts a round rings the members asleep on their idle doorbells (an idle engine
// sleeps there instead of cycling on a timer), so they join it.
#include <fmt/format.h>

#include <cstring>

#include "transport/shm/shm_backend.h"

namespace korovod::shm {

Status ShmBackend::allreduce_bits(std::vector<uint64_t>& bits, BitwiseOp op) {
  KOROVOD_RETURN_IF_ERROR(usable());
  if (bits.size() > bits_allreduce_words()) {
    return Status::invalid_argument(fmt::format(
        "shared-memory bit-vector allreduce: {} words do not fit the control block ({} at most)", bits.size(),
        bits_allreduce_words()));
  }
  if (size_ == 1) return Status::ok();
  Group& g = *group_;
  const uint64_t n = bits_round_++;
  const size_t offset = (n % 2) * (kControlAreaBytes / 2);
  std::memcpy(g.control_area(rank_) + offset, bits.data(), bits.size() * sizeof(uint64_t));
  g.post(Counter::kControl, n + 1);
  g.ring_sleeping_peers();  // idle engines join the round instead of sleeping through it
  KOROVOD_RETURN_IF_ERROR(g.wait_all(Counter::kControl, n + 1));
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    const auto* peer = reinterpret_cast<const uint64_t*>(g.control_area(r) + offset);
    if (op == BitwiseOp::kAnd) {
      for (size_t i = 0; i < bits.size(); ++i) bits[i] &= peer[i];
    } else {
      for (size_t i = 0; i < bits.size(); ++i) bits[i] |= peer[i];
    }
  }
  return Status::ok();
}

}  // namespace korovod::shm

namespace korovod::shm {

void ShmBackend::idle_wait(uint64_t token, double timeout_seconds) {
  // Any thread: touches only the segments' atomics (not the group's failure flag, which the
  // thread running a cycle may be setting); after a failure the engine stops on its own.
  if (group_) group_->sleep_idle(token, timeout_seconds);
}

}  // namespace korovod::shm
