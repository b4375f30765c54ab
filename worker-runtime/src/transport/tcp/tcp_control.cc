#include "transport/tcp/tcp_control.h"

namespace korovod::tcp {

void MeshControl::clear_io() {
  for (PeerIo& x : io_) x = {};
}

Status MeshControl::allreduce_bits(std::vector<uint64_t>& bits, BitwiseOp op) {
  const size_t n = bits.size();
  const auto bytes = static_cast<int64_t>(n * sizeof(uint64_t));
  std::vector<uint64_t> all(n * static_cast<size_t>(size()));
  clear_io();
  for (int p = 0; p < size(); ++p) {
    if (p == rank()) continue;
    io_[p] = {reinterpret_cast<const std::byte*>(bits.data()), bytes, 0,
              reinterpret_cast<std::byte*>(all.data() + n * static_cast<size_t>(p)), bytes, 0};
  }
  KOROVOD_RETURN_IF_ERROR(mesh_->exchange(io_, "control bits"));
  for (int p = 0; p < size(); ++p) {
    if (p == rank()) continue;
    for (size_t i = 0; i < n; ++i) {
      const uint64_t theirs = all[n * static_cast<size_t>(p) + i];
      bits[i] = op == BitwiseOp::kAnd ? bits[i] & theirs : bits[i] | theirs;
    }
  }
  return Status::ok();
}

Result<std::vector<std::string>> MeshControl::gather_to_root(const std::string& mine) {
  const int n = size();
  std::vector<uint64_t> lens(static_cast<size_t>(n), 0);
  uint64_t my_len = mine.size();
  clear_io();
  for (int p = 1; p < n; ++p) {
    if (rank() == 0) io_[p].recv = reinterpret_cast<std::byte*>(&lens[p]), io_[p].recv_len = 8;
  }
  if (rank() != 0) io_[0].send = reinterpret_cast<const std::byte*>(&my_len), io_[0].send_len = 8;
  KOROVOD_RETURN_IF_ERROR(mesh_->exchange(io_, "control gather"));
  std::vector<std::string> out(rank() == 0 ? static_cast<size_t>(n) : 0);
  clear_io();
  if (rank() == 0) {
    out[0] = mine;
    for (int p = 1; p < n; ++p) {
      out[p].resize(lens[p]);
      io_[p].recv = reinterpret_cast<std::byte*>(out[p].data()), io_[p].recv_len = static_cast<int64_t>(lens[p]);
    }
  } else {
    io_[0].send = reinterpret_cast<const std::byte*>(mine.data()), io_[0].send_len = static_cast<int64_t>(my_len);
  }
  KOROVOD_RETURN_IF_ERROR(mesh_->exchange(io_, "control gather"));
  return out;
}

Status MeshControl::broadcast_from_root(std::string& bytes) {
  uint64_t len = bytes.size();
  clear_io();
  for (int p = 1; p < size(); ++p) {
    if (rank() == 0) io_[p].send = reinterpret_cast<const std::byte*>(&len), io_[p].send_len = 8;
  }
  if (rank() != 0) io_[0].recv = reinterpret_cast<std::byte*>(&len), io_[0].recv_len = 8;
  KOROVOD_RETURN_IF_ERROR(mesh_->exchange(io_, "control broadcast"));
  if (rank() != 0) bytes.resize(len);
  clear_io();
  for (int p = 1; p < size(); ++p) {
    if (rank() == 0) io_[p].send = reinterpret_cast<const std::byte*>(bytes.data()), io_[p].send_len = static_cast<int64_t>(len);
  }
  if (rank() != 0) io_[0].recv = reinterpret_cast<std::byte*>(bytes.data()), io_[0].recv_len = static_cast<int64_t>(len);
  return mesh_->exchange(io_, "control broadcast");
}

}  // namespace korovod::tcp
