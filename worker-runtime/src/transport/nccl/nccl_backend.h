// GPU data plane on NCCL: one communicator and one CUDA stream per process set, created on the
// first collective (Horovod's lazy init: rank 0's ncclGetUniqueId goes to the others over the
// set's control channel). Every call enqueues on the stream and synchronizes before returning,
// so the engine's one-op-at-a-time ordering holds. Host pointers (a joined rank's zeros,
// handle-owned outputs, alltoall's split counts) are staged through device scratch buffers.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <memory>
#include <string>
#include <vector>

#include "korovod/transport.h"

namespace korovod::nccl {

// How many GPUs this process can use; an error naming cudaGetDeviceCount when none or no driver.
Result<int> visible_gpus();
// The PCI bus id of `device` ("0000:3B:00.0"), "" when there is none.
std::string gpu_bus_id(int device);

// Rank 0's answer to the members' reports at communicator setup ("ok " + gpu_identity_line of
// the GPU it selected, or "err " + why not): "ok" + `id` (ncclUniqueId bytes), or "err " + the
// error every member returns: the members that failed, or those that would share a GPU.
std::string setup_verdict(const std::vector<std::string>& reports, const std::string& id);

class NcclBackend final : public Backend {
 public:
  // local_rank picks the GPU (local_rank % visible GPUs) when the first tensor's pointer does not.
  // host_id: this rank's host identity, to name members that would share a GPU at setup.
  NcclBackend(std::unique_ptr<ControlChannel> control, int local_rank, std::string host_id = "");
  ~NcclBackend() override;
  NcclBackend(const NcclBackend&) = delete;
  NcclBackend& operator=(const NcclBackend&) = delete;

  std::string name() const override { return "NCCL"; }
  bool enabled(int device) const override { return device >= 0; }
  int rank() const override { return control_->rank(); }
  int size() const override { return control_->size(); }
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
  struct Scratch {
    void* ptr = nullptr;
    int64_t bytes = 0;
  };
  struct CopyBack {
    void* host;
    const void* device;
    int64_t bytes;
  };
  class RedOp;  // an ncclRedOp_t, destroyed after use when it is a PreMulSum

  // Collective (every member calls it in the same op): sets up device, stream and communicator
  // once; a failure on any member fails every member the same way, then and on later calls.
  Status ensure_ready(const void* hint);
  Status create_communicator(const void* hint);
  Status select_device(const void* hint);
  // A device pointer for `p`: `p` itself for device memory, else scratch `slot`, filled from `p`
  // when copy_in and copied back to `p` by finish() when copy_back.
  Result<void*> to_device(const void* p, int64_t bytes, int slot, bool copy_in, bool copy_back);
  // send/recv on the device; the same pointer for both when send == recv (in place).
  Status device_pair(const void*& send, int64_t send_bytes, void*& recv, int64_t recv_bytes);
  // Copies staged results back, waits for the stream and checks NCCL's asynchronous errors.
  Status finish(Status enqueued);
  Result<std::unique_ptr<RedOp>> reduction(ReduceOp op, DataType dtype, double prescale, double postscale);

  // Constant after construction.
  const std::unique_ptr<ControlChannel> control_;
  const int local_rank_;
  const std::string host_id_;
  // Background thread only.
  Status init_status_;
  bool ready_ = false;
  int device_ = -1;
  cudaStream_t stream_ = nullptr;
  ncclComm_t comm_ = nullptr;
  Scratch scratch_[2];
  std::vector<CopyBack> copy_backs_;
};

}  // namespace korovod::nccl
