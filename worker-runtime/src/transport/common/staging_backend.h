// GPU tensors through host memory, for process sets whose ranks share a GPU (NCCL refuses two
// ranks of one communicator on one GPU) or when KOROVOD_GPU_OPERATIONS=staging forces it: each
// collective copies the device input into a pinned host buffer, runs on the set's host data plane
// (the backend its CPU tensors use: shared memory, TCP or MPI, handed over by
// attach_host_plane), and copies the result back to the device. Scaling happens on the host
// copy, with the CPU path's semantics (Average = Sum then 1/size; any dtype and op may be scaled).
// Pointers the host can read (a joined rank's zeros, handle-owned outputs, alltoall's split
// counts) go to the host plane as they are.
//
// A failed copy is an UnknownError, which stops this rank's engine: the other members are then
// left waiting in the host collective until its timeout, as for any transport failure.
//
// Nothing here touches CUDA: the DeviceCopier does. rt_staging_test runs all of it on CPU with a
// fake copier whose "device" memory the host cannot touch.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "korovod/transport.h"
#include "transport/common/device_copier.h"

namespace korovod {

class StagingBackend final : public Backend {
 public:
  // rank / size: this member's place in the process set. why: the reason staging was chosen,
  // for rank 0's startup line ("ranks 0 and 1 share GPU 0000:3B:00.0").
  StagingBackend(std::unique_ptr<DeviceCopier> copier, int rank, int size, std::string why);
  ~StagingBackend() override;
  StagingBackend(const StagingBackend&) = delete;
  StagingBackend& operator=(const StagingBackend&) = delete;

  // The host plane's name ("SHM", "MPI", "TCP"): the timeline shows where the bytes went.
  std::string name() const override { return host_ ? host_->name() : "HOST"; }
  std::string description() const override;
  bool enabled(int device) const override { return device >= 0; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void attach_host_plane(Backend& host) override { host_ = &host; }

  Status allreduce(const void* send, void* recv, int64_t count, DataType dtype, ReduceOp op) override;
  Status allgatherv(const void* send, int64_t send_bytes, void* recv, const std::vector<int64_t>& recv_bytes) override;
  Status broadcast(void* buffer, int64_t bytes, int root) override;
  Status alltoallv(const void* send, const std::vector<int64_t>& send_bytes, void* recv,
                   const std::vector<int64_t>& recv_bytes) override;
  Status reducescatter(const void* send, void* recv, const std::vector<int64_t>& recv_counts, DataType dtype,
                       ReduceOp op) override;
  Status barrier() override;
  Status allreduce_scaled(const void* send, void* recv, int64_t count, DataType dtype, ReduceOp op, double prescale,
                          double postscale) override;
  Status reducescatter_scaled(const void* send, void* recv, const std::vector<int64_t>& recv_counts, DataType dtype,
                              ReduceOp op, double prescale, double postscale) override;
  Status copy(void* dst, const void* src, int64_t bytes) override;

 private:
  // Where the host plane reads or writes `bytes` of a caller's pointer: the pointer itself when
  // the host can touch it, else staging buffer `slot` (filled from the device when copy_in).
  struct HostView {
    void* host = nullptr;
    void* device = nullptr;  // null: nothing to copy back
    int64_t bytes = 0;
  };
  Result<HostView> host_view(const void* p, int64_t bytes, int slot, bool copy_in, const char* what);
  // host = the `bytes` at src (device or host memory).
  Status load(void* host, const void* src, int64_t bytes, const char* what);
  Status to_host(void* host, const void* device, int64_t bytes, const char* what);
  // The device side of `v` gets the host result (nothing for host memory).
  Status copy_back(const HostView& v, const char* what);
  Result<void*> buffer(int slot, int64_t bytes);
  Status need_host_plane(const char* what) const;

  struct HostBuffer {
    void* ptr = nullptr;
    int64_t bytes = 0;
  };

  const std::unique_ptr<DeviceCopier> copier_;
  const int rank_, size_;
  const std::string why_;
  Backend* host_ = nullptr;  // the set's host data plane, owned by the same ProcessSet
  HostBuffer buffers_[2];    // 0: inputs, 1: outputs (background thread only)
};

}  // namespace korovod
