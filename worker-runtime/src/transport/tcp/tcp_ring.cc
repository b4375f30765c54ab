// The ring collectives of the TCP backend: allreduce (reduce-scatter + allgather) and
// reducescatter, both on one streaming pipeline (run_ring).
#include <poll.h>

#include <algorithm>
#include <cstring>

#include "kernels/kernels.h"
#include "transport/tcp/tcp_backend.h"

namespace korovod::tcp {
namespace {

int wrap(int r, int n) { return ((r % n) + n) % n; }

// The pipeline state of one run_ring call.
struct RingCursor {
  size_t send_block = 0, recv_block = 0;
  int64_t sent = 0;       // bytes of send_block handed to the kernel
  int64_t processed = 0;  // bytes of recv_block received and reduced into place
  int64_t staged = 0;     // bytes of the current segment waiting in the staging buffer
};

}  // namespace

TcpBackend::TcpBackend(std::unique_ptr<Mesh> mesh, int64_t segment_bytes)
    : mesh_(std::move(mesh)), segment_bytes_(std::max<int64_t>(64, segment_bytes / 64 * 64)) {
  staging_.resize(static_cast<size_t>(segment_bytes_));
  io_.resize(static_cast<size_t>(mesh_->size()));
}

Status TcpBackend::run_ring(const std::vector<RingBlock>& blocks, DataType dtype, ReduceOp op, const char* what) {
  const int n = size();
  const int next = wrap(rank() + 1, n), prev = wrap(rank() - 1, n);
  const int64_t elem = element_size(dtype);
  const size_t total = blocks.size();
  RingCursor c;
  // Block b may send what block b-1 has put in place so far.
  auto sendable = [&](size_t b) -> int64_t {
    if (b == 0 || b - 1 < c.recv_block) return blocks[b].send_bytes;
    return b - 1 == c.recv_block ? c.processed : 0;
  };
  std::vector<short> want(static_cast<size_t>(n), 0), ready(static_cast<size_t>(n), 0);
  for (;;) {
    for (bool moved = true; moved;) {
      moved = false;
      while (c.send_block < total && c.sent == blocks[c.send_block].send_bytes) ++c.send_block, c.sent = 0;
      if (c.send_block < total && c.sent < sendable(c.send_block)) {
        const RingBlock& b = blocks[c.send_block];
        Result<int64_t> k = mesh_->send_some(next, b.send_src + c.sent, sendable(c.send_block) - c.sent);
        if (!k.is_ok()) return k.status();
        c.sent += *k;
        moved = moved || *k > 0;
      }
      while (c.recv_block < total && c.processed == blocks[c.recv_block].recv_bytes) ++c.recv_block, c.processed = 0;
      if (c.recv_block < total) {
        const RingBlock& b = blocks[c.recv_block];
        if (b.mine == nullptr) {  // a copy: straight into place
          Result<int64_t> k = mesh_->recv_some(prev, b.recv_dst + c.processed, b.recv_bytes - c.processed);
          if (!k.is_ok()) return k.status();
          c.processed += *k;
          moved = moved || *k > 0;
        } else {
          const int64_t segment = std::min(segment_bytes_, b.recv_bytes - c.processed);
          Result<int64_t> k = mesh_->recv_some(prev, staging_.data() + c.staged, segment - c.staged);
          if (!k.is_ok()) return k.status();
          c.staged += *k;
          moved = moved || *k > 0;
          if (c.staged == segment) {
            // partial (from the previous ranks) op mine: the same order for this chunk everywhere.
            kernels::reduce_into(dtype, op, staging_.data(), b.mine + c.processed, segment / elem);
            std::memcpy(b.recv_dst + c.processed, staging_.data(), static_cast<size_t>(segment));
            c.processed += segment;
            c.staged = 0;
          }
        }
      }
    }
    if (c.send_block == total && c.recv_block == total) return Status::ok();
    std::fill(want.begin(), want.end(), 0);
    if (c.send_block < total && c.sent < sendable(c.send_block)) want[next] |= POLLOUT;
    if (c.recv_block < total) want[prev] |= POLLIN;
    KOROVOD_RETURN_IF_ERROR(mesh_->wait(want, ready, what));
  }
}

Status TcpBackend::allreduce(const void* send, void* recv, int64_t count, DataType dtype, ReduceOp op) {
  KOROVOD_RETURN_IF_ERROR(mesh_->failed());
  const auto* s = static_cast<const std::byte*>(send);
  auto* r = static_cast<std::byte*>(recv);
  const int64_t elem = element_size(dtype);
  const int n = size(), me = rank();
  if (count == 0) return Status::ok();
  if (n == 1) {
    if (s != r) std::memcpy(r, s, static_cast<size_t>(count * elem));
    return Status::ok();
  }
  // Chunk c: elements [c * per, (c + 1) * per) clipped to count; trailing chunks may be empty.
  const int64_t per = (count + n - 1) / n;
  auto off = [&](int c) { return std::min(count, per * wrap(c, n)) * elem; };
  auto len = [&](int c) { return std::min(count, per * (wrap(c, n) + 1)) * elem - off(c); };
  std::vector<RingBlock> blocks;
  blocks.reserve(static_cast<size_t>(2 * (n - 1)));
  // Reduce-scatter: step b sends chunk me-b (own input first, then what was just reduced) and
  // receives chunk me-b-1; after n-1 steps this rank holds chunk me+1 fully reduced.
  for (int b = 0; b < n - 1; ++b) {
    const int sc = me - b, rc = me - b - 1;
    blocks.push_back({(b == 0 ? s : r) + off(sc), len(sc), r + off(rc), s + off(rc), len(rc)});
  }
  // Allgather: pass the finished chunks on, starting with this rank's own.
  for (int b = 0; b < n - 1; ++b) {
    const int sc = me + 1 - b, rc = me - b;
    blocks.push_back({r + off(sc), len(sc), r + off(rc), nullptr, len(rc)});
  }
  return run_ring(blocks, dtype, op, "allreduce");
}

Status TcpBackend::reducescatter(const void* send, void* recv, const std::vector<int64_t>& recv_counts,
                                 DataType dtype, ReduceOp op) {
  KOROVOD_RETURN_IF_ERROR(mesh_->failed());
  const auto* s = static_cast<const std::byte*>(send);
  auto* r = static_cast<std::byte*>(recv);
  const int64_t elem = element_size(dtype);
  const int n = size(), me = rank();
  std::vector<int64_t> offsets(static_cast<size_t>(n) + 1, 0);
  for (int c = 0; c < n; ++c) offsets[c + 1] = offsets[c] + recv_counts[c] * elem;
  if (n == 1) {
    if (s != r && offsets[1] > 0) std::memcpy(r, s, static_cast<size_t>(offsets[1]));
    return Status::ok();
  }
  if (scratch_.size() < static_cast<size_t>(offsets[n])) scratch_.resize(static_cast<size_t>(offsets[n]));
  std::byte* part = scratch_.data();
  auto off = [&](int c) { return offsets[wrap(c, n)]; };
  auto len = [&](int c) { return recv_counts[wrap(c, n)] * elem; };
  // Shifted by one against allreduce: after n-1 steps this rank holds its own chunk.
  std::vector<RingBlock> blocks;
  for (int b = 0; b < n - 1; ++b) {
    const int sc = me - b - 1, rc = me - b - 2;
    blocks.push_back(
        {(b == 0 ? s : part) + off(sc), len(sc), b == n - 2 ? r : part + off(rc), s + off(rc), len(rc)});
  }
  return run_ring(blocks, dtype, op, "reducescatter");
}

}  // namespace korovod::tcp
