// Reductions on the shared-memory rings: allreduce (one hop / pipelined reduce-scatter +
// allgather) and reducescatter.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "kernels/stream_copy.h"
#include "kernels/kernels.h"
#include "transport/shm/shm_backend.h"

namespace korovod::shm {
namespace {

constexpr int64_t kBlockBytes = 4096;  // reduction block: sources and result stay in L1
constexpr int64_t kWideBlock = 1024;   // 16-bit floats widened per block

struct Part {
  int64_t off = 0, len = 0;
};

// Rank p's share of `len` elements: equal shares rounded up to whole cache lines, so owners
// never write the same line; trailing ranks may get less or nothing. Same on every rank.
Part part_of(int64_t len, int n, int p, int64_t elem) {
  const int64_t line = static_cast<int64_t>(kCacheLine) / elem;
  int64_t per = (len + n - 1) / n;
  per = (per + line - 1) / line * line;
  const int64_t off = std::min(len, per * p);
  return {off, std::min(len, off + per) - off};
}

int64_t clamp_len(int64_t total, int64_t start, int64_t cap) { return std::clamp<int64_t>(total - start, 0, cap); }

bool is_half(DataType d) { return d == DataType::kFloat16 || d == DataType::kBFloat16; }

}  // namespace

ShmBackend::ShmBackend(std::unique_ptr<Group> group) : group_(std::move(group)) {
  if (group_) {
    rank_ = group_->rank();
    size_ = group_->size();
    stores_ = StoreChooser(group_->geometry().slot_stores);
  }
  srcs_.resize(size_);
  block_.resize(kBlockBytes);
  wide_a_.resize(kWideBlock);
  wide_b_.resize(kWideBlock);
}

void ShmBackend::set_chunk_bytes(int64_t bytes) {
  if (!group_ || bytes <= 0) {
    chunk_bytes_ = 0;
    return;
  }
  chunk_bytes_ = std::clamp<int64_t>(bytes / 4096 * 4096, 4096, static_cast<int64_t>(group_->geometry().slot_bytes));
}

int64_t ShmBackend::chunk_bytes() const {
  if (chunk_bytes_ > 0) return chunk_bytes_;
  return group_ ? static_cast<int64_t>(group_->geometry().slot_bytes) : 0;
}

Status ShmBackend::usable() const {
  if (!group_) return Status::invalid_argument("shared-memory backend: the process set spans hosts");
  if (group_->failed()) return Status::aborted("shared-memory backend: a rank of the process set failed earlier");
  return Status::ok();
}

void ShmBackend::reduce_sources(DataType dtype, ReduceOp op, std::byte* dst, std::byte* dst2,
                                const std::vector<const std::byte*>& srcs, int64_t count, bool stream_dst,
                                bool stream_dst2, double scale) {
  const int64_t elem = element_size(dtype);
  if (is_half(dtype)) {
    const bool bf = dtype == DataType::kBFloat16;
    auto widen = bf ? kernels::bfloat16_to_float32 : kernels::float16_to_float32;
    auto narrow = bf ? kernels::float32_to_bfloat16 : kernels::float32_to_float16;
    for (int64_t s = 0; s < count; s += kWideBlock) {
      const int64_t n = std::min(kWideBlock, count - s);
      widen(reinterpret_cast<const uint16_t*>(srcs[0]) + s, wide_a_.data(), n);
      for (size_t j = 1; j < srcs.size(); ++j) {
        widen(reinterpret_cast<const uint16_t*>(srcs[j]) + s, wide_b_.data(), n);
        kernels::reduce_into(DataType::kFloat32, op, wide_a_.data(), wide_b_.data(), n);
      }
      narrow(wide_a_.data(), reinterpret_cast<uint16_t*>(dst) + s, n);
      if (scale != 1.0) kernels::scale(dtype, dst + s * elem, n, scale);
      if (dst2 && stream_dst2) {
        stream_copy(dst2 + s * elem, dst + s * elem, n * elem);
      } else if (dst2) {
        std::memcpy(dst2 + s * elem, dst + s * elem, static_cast<size_t>(n * elem));
      }
    }
    return;
  }
  const int64_t per_block = kBlockBytes / elem;
  for (int64_t s = 0; s < count; s += per_block) {
    const int64_t n = std::min(per_block, count - s);
    const size_t bytes = static_cast<size_t>(n * elem);
    std::memcpy(block_.data(), srcs[0] + s * elem, bytes);
    for (size_t j = 1; j < srcs.size(); ++j) kernels::reduce_into(dtype, op, block_.data(), srcs[j] + s * elem, n);
    if (scale != 1.0) kernels::scale(dtype, block_.data(), n, scale);
    if (stream_dst) {
      stream_copy(dst + s * elem, block_.data(), static_cast<int64_t>(bytes));
    } else {
      std::memcpy(dst + s * elem, block_.data(), bytes);
    }
    if (dst2 && stream_dst2) {
      stream_copy(dst2 + s * elem, block_.data(), static_cast<int64_t>(bytes));
    } else if (dst2) {
      std::memcpy(dst2 + s * elem, block_.data(), bytes);
    }
  }
}

Status ShmBackend::allreduce(const void* send, void* recv, int64_t count, DataType dtype, ReduceOp op) {
  KOROVOD_RETURN_IF_ERROR(usable());
  if (count == 0) return Status::ok();
  if (size_ == 1) {
    if (send != recv) std::memcpy(recv, send, static_cast<size_t>(count * element_size(dtype)));
    return Status::ok();
  }
  const void* sends[1] = {send};
  void* recvs[1] = {recv};
  const int64_t ends[1] = {count};
  return allreduce_layout(Layout{sends, recvs, ends, 1, element_size(dtype)}, dtype, op, 1.0);
}

Status ShmBackend::allreduce_many(const std::vector<const void*>& sends, const std::vector<void*>& recvs,
                                  const std::vector<int64_t>& counts, DataType dtype, ReduceOp op, double postscale) {
  KOROVOD_RETURN_IF_ERROR(usable());
  if (sends.size() != counts.size() || recvs.size() != counts.size()) {
    return Status::invalid_argument(fmt::format("shared-memory allreduce of many tensors: {} inputs, {} outputs, {} counts",
                                                sends.size(), recvs.size(), counts.size()));
  }
  const int64_t elem = element_size(dtype);
  ends_.resize(counts.size());
  int64_t total = 0;
  for (size_t i = 0; i < counts.size(); ++i) ends_[i] = total += counts[i];
  if (total == 0) return Status::ok();
  if (size_ == 1) {
    for (size_t i = 0; i < counts.size(); ++i) {
      if (sends[i] != recvs[i]) std::memcpy(recvs[i], sends[i], static_cast<size_t>(counts[i] * elem));
      if (postscale != 1.0) kernels::scale(dtype, recvs[i], counts[i], postscale);
    }
    return Status::ok();
  }
  return allreduce_layout(Layout{sends.data(), recvs.data(), ends_.data(), counts.size(), elem}, dtype, op, postscale);
}

Status ShmBackend::allreduce_layout(const Layout& layout, DataType dtype, ReduceOp op, double postscale) {
  const int64_t bytes = layout.count() * layout.elem;
  if (bytes <= std::min<int64_t>(kOneHopBytes, static_cast<int64_t>(group_->geometry().slot_bytes))) {
    return one_hop_allreduce(layout, dtype, op, postscale);
  }
  return ring_allreduce(layout, dtype, op, postscale);
}

Status ShmBackend::one_hop_allreduce(const Layout& layout, DataType dtype, ReduceOp op, double postscale) {
  Group& g = *group_;
  const int64_t elem = layout.elem;
  const uint64_t k = round_++;
  KOROVOD_RETURN_IF_ERROR(g.acquire_slot(k));
  std::byte* mine = g.slot(rank_, k);
  layout.for_range(0, layout.count(), [&](const std::byte* send, std::byte*, int64_t at, int64_t n) {
    std::memcpy(mine + at * elem, send, static_cast<size_t>(n * elem));
  });
  g.post(Counter::kPosted, k + 1);
  KOROVOD_RETURN_IF_ERROR(g.wait_all(Counter::kPosted, k + 1));
  // Every rank reduces the same slots in the same order: bitwise-identical results. No source
  // aliases recv (send was copied into this rank's slot), so 32/64-bit types reduce straight
  // into recv: one pass fewer than reduce_sources' block.
  if (!is_half(dtype)) {
    layout.for_range(0, layout.count(), [&](const std::byte*, std::byte* recv, int64_t at, int64_t n) {
      std::memcpy(recv, g.slot(0, k) + at * elem, static_cast<size_t>(n * elem));
      for (int j = 1; j < size_; ++j) kernels::reduce_into(dtype, op, recv, g.slot(j, k) + at * elem, n);
      if (postscale != 1.0) kernels::scale(dtype, recv, n, postscale);
    });
    g.post(Counter::kConsumed, k + 1);
    return Status::ok();
  }
  layout.for_range(0, layout.count(), [&](const std::byte*, std::byte* recv, int64_t at, int64_t n) {
    for (int j = 0; j < size_; ++j) srcs_[j] = g.slot(j, k) + at * elem;
    reduce_sources(dtype, op, recv, nullptr, srcs_, n, false, false, postscale);
  });
  g.post(Counter::kConsumed, k + 1);
  return Status::ok();
}

Status ShmBackend::ring_allreduce(const Layout& layout, DataType dtype, ReduceOp op, double postscale) {
  const int64_t bytes = layout.count() * layout.elem;
  const SlotStores mode = group_->geometry().slot_stores;
  if (mode != SlotStores::kAuto) return ring_rounds(layout, dtype, op, mode == SlotStores::kStreaming, postscale);
  if (bytes < kChooseStoresBytes) return ring_rounds(layout, dtype, op, false, postscale);
  // Measured calls: the way follows StoreChooser's schedule on every rank; which way is favoured
  // comes from rank 0's measurements, published as one bit per size class in its kStores word.
  const int size_class = StoreChooser::size_class(bytes);
  if (rank_ != 0) {
    const bool favoured = (group_->peer_word(0, Counter::kStores) >> size_class) & 1;
    return ring_rounds(layout, dtype, op, stores_.streaming(bytes, favoured), postscale);
  }
  const bool streaming = stores_.streaming(bytes);
  const auto start = std::chrono::steady_clock::now();
  Status st = ring_rounds(layout, dtype, op, streaming, postscale);
  stores_.report(streaming, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), bytes);
  const uint64_t bit = uint64_t{1} << size_class;
  favoured_mask_ = stores_.favoured(bytes) ? favoured_mask_ | bit : favoured_mask_ & ~bit;
  group_->post(Counter::kStores, favoured_mask_);
  return st;
}

Status ShmBackend::ring_rounds(const Layout& layout, DataType dtype, ReduceOp op, bool stream_slots,
                               double postscale) {
  Group& g = *group_;
  const int64_t elem = layout.elem;
  const int64_t count = layout.count();
  const int64_t per_round = chunk_bytes() / elem;
  const int64_t rounds = (count + per_round - 1) / per_round;
  const uint64_t base = round_;
  round_ += static_cast<uint64_t>(rounds);
  auto round_len = [&](int64_t t) { return clamp_len(count, t * per_round, per_round); };
  // Outputs too large to stay in cache are written with streaming stores (no read-for-ownership
  // of every output line); fenced at the end, before this thread returns the result.
  const bool stream = count * elem >= static_cast<int64_t>(g.geometry().streaming_bytes) && g.geometry().streaming_bytes > 0;
  auto copy = [](std::byte* to, const std::byte* from, int64_t bytes, bool streaming) {
    if (streaming) {
      stream_copy(to, from, bytes);
    } else {
      std::memcpy(to, from, static_cast<size_t>(bytes));
    }
  };

  // Copy-in of round t: the shares other ranks own (this rank's own share is read in place).
  auto copy_in = [&](int64_t t) -> Status {
    const uint64_t k = base + static_cast<uint64_t>(t);
    KOROVOD_RETURN_IF_ERROR(g.acquire_slot(k));
    const int64_t len = round_len(t);
    for (int p = 0; p < size_; ++p) {
      if (p == rank_) continue;
      const Part part = part_of(len, size_, p, elem);
      std::byte* to = g.slot(rank_, k) + part.off * elem;
      layout.for_range(t * per_round + part.off, part.len, [&](const std::byte* send, std::byte*, int64_t at, int64_t n) {
        copy(to + at * elem, send, n * elem, stream_slots);
      });
    }
    if (stream_slots) stream_fence();  // the lines are in memory before the counter says so
    g.post(Counter::kPosted, k + 1);
    return Status::ok();
  };
  // The owner reduces its share once, into the output and into its slot for the others.
  auto reduce = [&](int64_t t) -> Status {
    const uint64_t k = base + static_cast<uint64_t>(t);
    KOROVOD_RETURN_IF_ERROR(g.wait_all(Counter::kPosted, k + 1));
    const Part part = part_of(round_len(t), size_, rank_, elem);
    layout.for_range(t * per_round + part.off, part.len, [&](const std::byte* send, std::byte* recv, int64_t at, int64_t n) {
      const int64_t in_slot = (part.off + at) * elem;
      for (int j = 0; j < size_; ++j) srcs_[j] = j == rank_ ? send : g.slot(j, k) + in_slot;
      reduce_sources(dtype, op, recv, g.slot(rank_, k) + in_slot, srcs_, n, stream, stream_slots, postscale);
    });
    if (stream_slots) stream_fence();
    g.post(Counter::kReduced, k + 1);
    return Status::ok();
  };
  auto gather = [&](int64_t t) -> Status {
    const uint64_t k = base + static_cast<uint64_t>(t);
    KOROVOD_RETURN_IF_ERROR(g.wait_all(Counter::kReduced, k + 1));
    const int64_t len = round_len(t);
    for (int p = 0; p < size_; ++p) {
      if (p == rank_) continue;
      const Part part = part_of(len, size_, p, elem);
      const std::byte* in = g.slot(p, k) + part.off * elem;
      layout.for_range(t * per_round + part.off, part.len, [&](const std::byte*, std::byte* recv, int64_t at, int64_t n) {
        copy(recv, in + at * elem, n * elem, stream);
      });
    }
    g.post(Counter::kConsumed, k + 1);
    return Status::ok();
  };
  // Software pipeline: while peers catch up on one stage this rank has another to work on.
  for (int64_t t = 0; t < rounds + 2; ++t) {
    if (t < rounds) KOROVOD_RETURN_IF_ERROR(copy_in(t));
    if (t >= 1 && t - 1 < rounds) KOROVOD_RETURN_IF_ERROR(reduce(t - 1));
    if (t >= 2) KOROVOD_RETURN_IF_ERROR(gather(t - 2));
  }
  if (stream) stream_fence();
  return Status::ok();
}

Status ShmBackend::reducescatter(const void* send, void* recv, const std::vector<int64_t>& recv_counts,
                                 DataType dtype, ReduceOp op) {
  KOROVOD_RETURN_IF_ERROR(usable());
  Group& g = *group_;
  const auto* s = static_cast<const std::byte*>(send);
  auto* r = static_cast<std::byte*>(recv);
  const int64_t elem = element_size(dtype);
  std::vector<int64_t> offsets(size_, 0);
  for (int j = 1; j < size_; ++j) offsets[j] = offsets[j - 1] + recv_counts[j - 1];
  if (size_ == 1) {
    if (s != r) std::memcpy(r, s, static_cast<size_t>(recv_counts[0] * elem));
    return Status::ok();
  }
  // Each slot holds one sub-region per destination rank, whole cache lines each.
  const int64_t sub = (chunk_bytes() / size_) / 64 * 64 / elem;
  const int64_t most = *std::max_element(recv_counts.begin(), recv_counts.end());
  const int64_t rounds = (most + sub - 1) / sub;
  const uint64_t base = round_;
  round_ += static_cast<uint64_t>(rounds);
  auto copy_in = [&](int64_t t) -> Status {
    const uint64_t k = base + static_cast<uint64_t>(t);
    KOROVOD_RETURN_IF_ERROR(g.acquire_slot(k));
    for (int j = 0; j < size_; ++j) {
      if (j == rank_) continue;
      const int64_t len = clamp_len(recv_counts[j], t * sub, sub);
      std::memcpy(g.slot(rank_, k) + j * sub * elem, s + (offsets[j] + t * sub) * elem, static_cast<size_t>(len * elem));
    }
    g.post(Counter::kPosted, k + 1);
    return Status::ok();
  };
  auto reduce = [&](int64_t t) -> Status {
    const uint64_t k = base + static_cast<uint64_t>(t);
    KOROVOD_RETURN_IF_ERROR(g.wait_all(Counter::kPosted, k + 1));
    const int64_t len = clamp_len(recv_counts[rank_], t * sub, sub);
    for (int j = 0; j < size_; ++j) {
      srcs_[j] = j == rank_ ? s + (offsets[rank_] + t * sub) * elem : g.slot(j, k) + rank_ * sub * elem;
    }
    reduce_sources(dtype, op, r + t * sub * elem, nullptr, srcs_, len);
    g.post(Counter::kConsumed, k + 1);
    return Status::ok();
  };
  for (int64_t t = 0; t < rounds + 1; ++t) {
    if (t < rounds) KOROVOD_RETURN_IF_ERROR(copy_in(t));
    if (t >= 1) KOROVOD_RETURN_IF_ERROR(reduce(t - 1));
  }
  return Status::ok();
}

}  // namespace korovod::shm
