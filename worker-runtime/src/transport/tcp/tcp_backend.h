// The TCP data plane of one process set: a socket to every other member (Mesh) and the
// collectives on it.
//
// allreduce: a ring, reduce-scatter then allgather, streamed in segments: a rank forwards a
// segment as soon as it has reduced it, while the kernel keeps receiving the next one (large
// socket buffers, nonblocking sockets, one poll loop: receive, reduce and send overlap). Chunk c
// is reduced in one fixed order around the ring and the finished chunk is only copied after
// that, so every rank gets bitwise-identical results. float16/bfloat16 reduce as the kernels do
// (each step in float32, rounded once per step).
// reducescatter: the same ring, shifted so that rank r finishes its own share.
// allgatherv, alltoallv, broadcast, barrier: every pair of ranks exchanges directly, all sockets
// at once (the same bytes per rank as a ring for allgather, one hop of latency); broadcasts of
// kChainBroadcastBytes and more are a pipelined chain from the root instead.
#pragma once

#include <memory>
#include <vector>

#include "korovod/transport.h"
#include "transport/tcp/mesh.h"

namespace korovod::tcp {

class TcpBackend final : public Backend {
 public:
  TcpBackend(std::unique_ptr<Mesh> mesh, int64_t segment_bytes);

  std::string name() const override { return "TCP"; }
  bool enabled(int device) const override { return device == kCpuDevice; }
  int rank() const override { return mesh_->rank(); }
  int size() const override { return mesh_->size(); }
  Status allreduce(const void* send, void* recv, int64_t count, DataType dtype, ReduceOp op) override;
  Status allgatherv(const void* send, int64_t send_bytes, void* recv,
                    const std::vector<int64_t>& recv_bytes) override;
  Status broadcast(void* buffer, int64_t bytes, int root) override;
  Status alltoallv(const void* send, const std::vector<int64_t>& send_bytes, void* recv,
                   const std::vector<int64_t>& recv_bytes) override;
  Status reducescatter(const void* send, void* recv, const std::vector<int64_t>& recv_counts, DataType dtype,
                       ReduceOp op) override;
  Status barrier() override;
  bool interrupt_wait(const std::string& why) override { return mesh_->interrupt(why); }

  // Broadcasts from this size up run as a chain (one hop per rank, pipelined), below as one
  // direct hop from the root to everyone.
  static constexpr int64_t kChainBroadcastBytes = 256 * 1024;

  // One step of a ring: send `send_bytes` from send_src to the next rank while receiving
  // `recv_bytes` from the previous one into recv_dst, reduced with `mine` first when it is not
  // null. Block b sends what block b-1 received, so a segment moves on as soon as it is in place.
  struct RingBlock {
    const std::byte* send_src = nullptr;
    int64_t send_bytes = 0;
    std::byte* recv_dst = nullptr;
    const std::byte* mine = nullptr;
    int64_t recv_bytes = 0;
  };

 private:
  Status run_ring(const std::vector<RingBlock>& blocks, DataType dtype, ReduceOp op, const char* what);

  std::unique_ptr<Mesh> mesh_;
  int64_t segment_bytes_;
  std::vector<std::byte> staging_;  // one received segment awaiting its reduction
  std::vector<std::byte> scratch_;  // reducescatter partial sums
  std::vector<PeerIo> io_;          // per-call scratch for the direct exchanges
};

}  // namespace korovod::tcp
