// The TCP collectives that only move bytes: allgatherv, broadcast, alltoallv, barrier. Each is
// one direct exchange (Mesh::exchange): every socket carries its share concurrently; a large
// broadcast is a pipelined chain instead.
#include "kernels/byte_copy.h"
#include "transport/tcp/tcp_backend.h"

namespace korovod::tcp {

Status TcpBackend::allgatherv(const void* send, int64_t send_bytes, void* recv,
                              const std::vector<int64_t>& recv_bytes) {
  KOROVOD_RETURN_IF_ERROR(mesh_->failed());
  const auto* s = static_cast<const std::byte*>(send);
  auto* r = static_cast<std::byte*>(recv);
  const std::vector<int64_t> displs = displacements(recv_bytes);
  copy_bytes(r + displs[rank()], s, send_bytes);
  for (int p = 0; p < size(); ++p) io_[p] = {s, send_bytes, 0, r + displs[p], recv_bytes[p], 0};
  return mesh_->exchange(io_, "allgatherv");
}

Status TcpBackend::broadcast(void* buffer, int64_t bytes, int root) {
  KOROVOD_RETURN_IF_ERROR(mesh_->failed());
  auto* buf = static_cast<std::byte*>(buffer);
  if (bytes >= kChainBroadcastBytes && size() > 2) {
    // A chain around the ring from the root, each rank forwarding bytes as they arrive: the root
    // sends the buffer once instead of size-1 times.
    const int last = (root + size() - 1) % size();
    std::vector<RingBlock> blocks;
    if (rank() != root) blocks.push_back({nullptr, 0, buf, nullptr, bytes});
    if (rank() != last) blocks.push_back({buf, bytes, nullptr, nullptr, 0});
    return run_ring(blocks, DataType::kUInt8, ReduceOp::kSum, "broadcast");
  }
  for (int p = 0; p < size(); ++p) {
    io_[p] = {};
    if (rank() == root) io_[p].send = buf, io_[p].send_len = bytes;
  }
  if (rank() != root) io_[root].recv = buf, io_[root].recv_len = bytes;
  return mesh_->exchange(io_, "broadcast");
}

Status TcpBackend::alltoallv(const void* send, const std::vector<int64_t>& send_bytes, void* recv,
                             const std::vector<int64_t>& recv_bytes) {
  KOROVOD_RETURN_IF_ERROR(mesh_->failed());
  const auto* s = static_cast<const std::byte*>(send);
  auto* r = static_cast<std::byte*>(recv);
  const std::vector<int64_t> sdispls = displacements(send_bytes), rdispls = displacements(recv_bytes);
  copy_bytes(r + rdispls[rank()], s + sdispls[rank()], send_bytes[rank()]);
  for (int p = 0; p < size(); ++p) io_[p] = {s + sdispls[p], send_bytes[p], 0, r + rdispls[p], recv_bytes[p], 0};
  return mesh_->exchange(io_, "alltoallv");
}

Status TcpBackend::barrier() {
  KOROVOD_RETURN_IF_ERROR(mesh_->failed());
  // One byte to and from every peer: nobody leaves before everyone has arrived.
  std::vector<std::byte> tokens(static_cast<size_t>(size()) + 1, std::byte{1});
  for (int p = 0; p < size(); ++p) io_[p] = {&tokens[size()], 1, 0, &tokens[p], 1, 0};
  return mesh_->exchange(io_, "barrier");
}

}  // namespace korovod::tcp
