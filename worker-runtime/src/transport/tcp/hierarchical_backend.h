// Hierarchical allreduce for a process set that spans hosts with the same number of ranks on
// each: shared-memory reduce-scatter on each host (local rank j ends with shard j reduced over
// its host), TCP allreduce of shard j among the ranks with local rank j (one per host), then a
// shared-memory allgather of the shards. Each shard's bits come out of one TCP ring and are
// only copied after that, so every rank gets identical results. The other collectives run on
// the flat TCP backend of the whole set.
#pragma once

#include <memory>
#include <vector>

#include "korovod/transport.h"

namespace korovod::tcp {

class HierarchicalBackend final : public Backend {
 public:
  HierarchicalBackend(std::unique_ptr<Backend> flat, std::unique_ptr<Backend> local, std::unique_ptr<Backend> cross)
      : flat_(std::move(flat)), local_(std::move(local)), cross_(std::move(cross)) {}

  std::string name() const override { return "TCP"; }
  bool enabled(int device) const override { return device == kCpuDevice; }
  int rank() const override { return flat_->rank(); }
  int size() const override { return flat_->size(); }
  int local_size() const { return local_->size(); }
  int cross_size() const { return cross_->size(); }
  Status allreduce(const void* send, void* recv, int64_t count, DataType dtype, ReduceOp op) override;
  Status allgatherv(const void* send, int64_t send_bytes, void* recv,
                    const std::vector<int64_t>& recv_bytes) override {
    return flat_->allgatherv(send, send_bytes, recv, recv_bytes);
  }
  Status broadcast(void* buffer, int64_t bytes, int root) override { return flat_->broadcast(buffer, bytes, root); }
  Status alltoallv(const void* send, const std::vector<int64_t>& send_bytes, void* recv,
                   const std::vector<int64_t>& recv_bytes) override {
    return flat_->alltoallv(send, send_bytes, recv, recv_bytes);
  }
  Status reducescatter(const void* send, void* recv, const std::vector<int64_t>& recv_counts, DataType dtype,
                       ReduceOp op) override {
    return flat_->reducescatter(send, recv, recv_counts, dtype, op);
  }
  Status barrier() override { return flat_->barrier(); }

 private:
  std::unique_ptr<Backend> flat_, local_, cross_;
  std::vector<std::byte> shard_;
};

}  // namespace korovod::tcp
