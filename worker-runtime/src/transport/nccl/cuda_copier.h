// Host staging's copies on CUDA (the DeviceCopier of staging_backend.h): one non-blocking stream
// per GPU, created on first use; every copy is a cudaMemcpyAsync on the stream of the GPU it
// touches, then a cudaStreamSynchronize, so it neither waits for nor holds up the framework's
// streams (the engine has already waited for the tensor's ready event). Staging buffers are
// pinned (cudaHostAlloc, portable), so those copies run at full PCIe speed.
//
// Like the NCCL backend, a call that must make a GPU current (creating its stream, allocating
// pinned memory in its context) leaves the calling thread on that GPU: restoring the previous
// device would create a context on it (cudaSetDevice does that since CUDA 12) — on GPU 0, for
// the background thread, in every rank.
#pragma once

#include <cuda_runtime_api.h>

#include <vector>

#include "transport/common/device_copier.h"

namespace korovod::nccl {

class CudaCopier final : public DeviceCopier {
 public:
  CudaCopier() = default;
  ~CudaCopier() override;
  CudaCopier(const CudaCopier&) = delete;
  CudaCopier& operator=(const CudaCopier&) = delete;

  Result<bool> on_device(const void* p) override;
  Status copy(void* dst, const void* src, int64_t bytes) override;
  // Pinned in the context of the GPU of the last device pointer on_device saw (the tensor being
  // staged), so no other GPU gets a context from it.
  Result<void*> allocate_host(int64_t bytes) override;
  void free_host(void* p) override;

 private:
  // The GPU owning `p` (-1: host memory, pinned or not, or managed memory).
  Result<int> device_of(const void* p);
  Result<cudaStream_t> stream_for(int device);
  Status make_current(int device);

  std::vector<cudaStream_t> streams_;  // by device; null until first used
  int last_device_ = -1;
};

}  // namespace korovod::nccl
