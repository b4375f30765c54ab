// Collectives that only move bytes on the shared-memory rings: broadcast, allgatherv,
// alltoallv, barrier. Each is pipelined over the slots: a rank copies round t in while it
// copies round t-1 out.
#include <algorithm>
#include <cstring>

#include "kernels/byte_copy.h"
#include "transport/shm/shm_backend.h"

namespace korovod::shm {
namespace {

int64_t clamp_len(int64_t total, int64_t start, int64_t cap) { return std::clamp<int64_t>(total - start, 0, cap); }

// `rounds` rounds through this rank's slot, pipelined by one: round t is written in (fill(k, t),
// k = its slot round) while round t-1 is read out of every other rank's slot (drain(p, k, t-1)).
// Takes the rounds from `next_round`.
template <typename Fill, typename Drain>
Status pipelined_rounds(Group& g, uint64_t& next_round, int rank, int size, int64_t rounds, Fill fill,
                        Drain drain) {
  const uint64_t base = next_round;
  next_round += static_cast<uint64_t>(rounds);
  for (int64_t t = 0; t < rounds + 1; ++t) {
    if (t < rounds) {
      const uint64_t k = base + static_cast<uint64_t>(t);
      KOROVOD_RETURN_IF_ERROR(g.acquire_slot(k));
      fill(k, t);
      g.post(Counter::kPosted, k + 1);
    }
    if (t >= 1) {
      const uint64_t k = base + static_cast<uint64_t>(t - 1);
      for (int p = 0; p < size; ++p) {
        if (p == rank) continue;
        KOROVOD_RETURN_IF_ERROR(g.wait(p, Counter::kPosted, k + 1));
        drain(p, k, t - 1);
      }
      g.post(Counter::kConsumed, k + 1);
    }
  }
  return Status::ok();
}

}  // namespace

Status ShmBackend::broadcast(void* buffer, int64_t bytes, int root) {
  KOROVOD_RETURN_IF_ERROR(usable());
  if (size_ == 1 || bytes == 0) return Status::ok();
  Group& g = *group_;
  auto* buf = static_cast<std::byte*>(buffer);
  const int64_t chunk = chunk_bytes();
  const int64_t rounds = (bytes + chunk - 1) / chunk;
  const uint64_t base = round_;
  round_ += static_cast<uint64_t>(rounds);
  for (int64_t t = 0; t < rounds; ++t) {
    const uint64_t k = base + static_cast<uint64_t>(t);
    const int64_t len = clamp_len(bytes, t * chunk, chunk);
    if (rank_ == root) {
      KOROVOD_RETURN_IF_ERROR(g.acquire_slot(k));
      copy_bytes(g.slot(root, k), buf + t * chunk, len);
      g.post(Counter::kPosted, k + 1);
    } else {
      KOROVOD_RETURN_IF_ERROR(g.wait(root, Counter::kPosted, k + 1));
      copy_bytes(buf + t * chunk, g.slot(root, k), len);
    }
    // Every rank marks every round consumed: the next collective may have another root, whose
    // acquire_slot waits on all counters.
    g.post(Counter::kConsumed, k + 1);
  }
  return Status::ok();
}

Status ShmBackend::allgatherv(const void* send, int64_t send_bytes, void* recv,
                              const std::vector<int64_t>& recv_bytes) {
  KOROVOD_RETURN_IF_ERROR(usable());
  Group& g = *group_;
  const auto* s = static_cast<const std::byte*>(send);
  auto* r = static_cast<std::byte*>(recv);
  const std::vector<int64_t> displs = displacements(recv_bytes);
  copy_bytes(r + displs[rank_], s, send_bytes);
  if (size_ == 1) return Status::ok();
  const int64_t chunk = chunk_bytes();
  const int64_t most = *std::max_element(recv_bytes.begin(), recv_bytes.end());
  const int64_t rounds = (most + chunk - 1) / chunk;
  return pipelined_rounds(
      g, round_, rank_, size_, rounds,
      [&](uint64_t k, int64_t t) { copy_bytes(g.slot(rank_, k), s + t * chunk, clamp_len(send_bytes, t * chunk, chunk)); },
      [&](int p, uint64_t k, int64_t u) {
        copy_bytes(r + displs[p] + u * chunk, g.slot(p, k), clamp_len(recv_bytes[p], u * chunk, chunk));
      });
}

Status ShmBackend::alltoallv(const void* send, const std::vector<int64_t>& send_bytes, void* recv,
                             const std::vector<int64_t>& recv_bytes) {
  KOROVOD_RETURN_IF_ERROR(usable());
  Group& g = *group_;
  const auto* s = static_cast<const std::byte*>(send);
  auto* r = static_cast<std::byte*>(recv);
  const std::vector<int64_t> sdispls = displacements(send_bytes);
  const std::vector<int64_t> rdispls = displacements(recv_bytes);
  copy_bytes(r + rdispls[rank_], s + sdispls[rank_], send_bytes[rank_]);
  if (size_ == 1) return Status::ok();
  // A rank knows only what it sends and receives; one header round agrees on the largest
  // block anyone sends, i.e. on the number of rounds.
  const uint64_t header = round_++;
  KOROVOD_RETURN_IF_ERROR(g.acquire_slot(header));
  const int64_t mine = *std::max_element(send_bytes.begin(), send_bytes.end());
  std::memcpy(g.slot(rank_, header), &mine, sizeof mine);
  g.post(Counter::kPosted, header + 1);
  KOROVOD_RETURN_IF_ERROR(g.wait_all(Counter::kPosted, header + 1));
  int64_t most = 0;
  for (int p = 0; p < size_; ++p) {
    int64_t theirs = 0;
    std::memcpy(&theirs, g.slot(p, header), sizeof theirs);
    most = std::max(most, theirs);
  }
  g.post(Counter::kConsumed, header + 1);

  const int64_t sub = chunk_bytes() / size_ / 64 * 64;
  const int64_t rounds = (most + sub - 1) / sub;
  return pipelined_rounds(
      g, round_, rank_, size_, rounds,
      [&](uint64_t k, int64_t t) {
        for (int j = 0; j < size_; ++j) {
          if (j != rank_) copy_bytes(g.slot(rank_, k) + j * sub, s + sdispls[j] + t * sub, clamp_len(send_bytes[j], t * sub, sub));
        }
      },
      [&](int p, uint64_t k, int64_t u) {
        copy_bytes(r + rdispls[p] + u * sub, g.slot(p, k) + rank_ * sub, clamp_len(recv_bytes[p], u * sub, sub));
      });
}

Status ShmBackend::barrier() {
  KOROVOD_RETURN_IF_ERROR(usable());
  if (size_ == 1) return Status::ok();
  Group& g = *group_;
  const uint64_t k = round_++;
  g.post(Counter::kPosted, k + 1);
  KOROVOD_RETURN_IF_ERROR(g.wait_all(Counter::kPosted, k + 1));
  g.post(Counter::kConsumed, k + 1);
  return Status::ok();
}

}  // namespace korovod::shm
