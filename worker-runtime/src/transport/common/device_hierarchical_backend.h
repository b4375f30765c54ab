// Hierarchical allreduce for device tensors (Horovod's NCCLHierarchicalAllreduce,
// KOROVOD_HIERARCHICAL_ALLREDUCE=1): for a set spanning hosts with the same number of ranks on
// each, a reduce-scatter on the host's device backend (NCCL among the host's GPUs) leaves local
// rank j with shard j of its host's sum in place in the output; the shard is staged to host
// memory, allreduced across hosts on a CPU backend (TCP or MPI, the ranks with local index j),
// staged back, and an allgather on the device backend completes the output on every GPU. Each
// shard comes out of one cross-host allreduce and is only copied after that, so every rank gets
// the same bits. Every other collective runs on the flat device backend of the whole set.
//
// Nothing here touches CUDA: the device backends move the memory (their copy() stages), so the
// composition is tested on CPU with shared memory as the "device" backend (rt_shm_test).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "korovod/transport.h"

namespace korovod {

class DeviceHierarchicalBackend final : public Backend {
 public:
  DeviceHierarchicalBackend(std::unique_ptr<Backend> flat, std::unique_ptr<Backend> local,
                            std::unique_ptr<Backend> cross)
      : flat_(std::move(flat)), local_(std::move(local)), cross_(std::move(cross)) {}

  std::string name() const override { return flat_->name(); }
  bool enabled(int device) const override { return flat_->enabled(device); }
  int rank() const override { return flat_->rank(); }
  int size() const override { return flat_->size(); }
  int local_size() const { return local_->size(); }
  int cross_size() const { return cross_->size(); }

  Status allreduce(const void* send, void* recv, int64_t count, DataType dtype, ReduceOp op) override {
    return hierarchical(send, recv, count, dtype, op, 1.0, 1.0);
  }
  Status allreduce_scaled(const void* send, void* recv, int64_t count, DataType dtype, ReduceOp op, double prescale,
                          double postscale) override {
    return hierarchical(send, recv, count, dtype, op, prescale, postscale);
  }
  Status allgatherv(const void* send, int64_t send_bytes, void* recv, const std::vector<int64_t>& recv_bytes) override {
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
  Status reducescatter_scaled(const void* send, void* recv, const std::vector<int64_t>& recv_counts, DataType dtype,
                              ReduceOp op, double prescale, double postscale) override {
    return flat_->reducescatter_scaled(send, recv, recv_counts, dtype, op, prescale, postscale);
  }
  Status barrier() override { return flat_->barrier(); }
  Status copy(void* dst, const void* src, int64_t bytes) override { return flat_->copy(dst, src, bytes); }

 private:
  Status hierarchical(const void* send, void* recv, int64_t count, DataType dtype, ReduceOp op, double prescale,
                      double postscale);

  std::unique_ptr<Backend> flat_, local_, cross_;
  std::vector<std::byte> host_shard_;  // the staged shard, host memory
};

}  // namespace korovod
