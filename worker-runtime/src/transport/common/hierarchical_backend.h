// Hierarchical allreduce (KOROVOD_HIERARCHICAL_ALLREDUCE=1) for a set spanning hosts with the
// same number of ranks on each: a reduce-scatter on the host's `local` backend leaves local rank j
// with shard j of its host's sum, in place in the output; the shard is allreduced across hosts on
// the `cross` backend (the ranks with local index j, one per host), and an allgather on the local
// backend completes the output. Each shard comes out of one cross-host allreduce and is only
// copied after that, so every rank gets the same bits. Every other collective runs on the flat
// backend of the whole set.
//   CPU tensors (TCP data plane): local = shared memory, cross = TCP.
//   GPU tensors (Horovod's NCCLHierarchicalAllreduce): local = NCCL in the host, cross = MPI;
//   the shard is staged to host memory and back through the local backend's copy().
// Nothing here touches CUDA, so the staged composition is also tested on CPU, with shared memory
// in NCCL's place (rt_shm_np4).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "korovod/transport.h"

namespace korovod {

class HierarchicalBackend final : public Backend {
 public:
  HierarchicalBackend(std::unique_ptr<Backend> flat, std::unique_ptr<Backend> local,
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
  bool interrupt_wait(const std::string& why) override {
    // Every part: the one in progress says so (the others only fail their next wait).
    const bool flat = flat_->interrupt_wait(why), local = local_->interrupt_wait(why);
    return cross_->interrupt_wait(why) || flat || local;
  }
  void set_chunk_bytes(int64_t bytes) override {
    flat_->set_chunk_bytes(bytes);
    local_->set_chunk_bytes(bytes);
    cross_->set_chunk_bytes(bytes);
  }

 private:
  Status hierarchical(const void* send, void* recv, int64_t count, DataType dtype, ReduceOp op, double prescale,
                      double postscale);

  std::unique_ptr<Backend> flat_, local_, cross_;
  std::vector<std::byte> host_shard_;  // the staged shard (device local backend only)
};

}  // namespace korovod
