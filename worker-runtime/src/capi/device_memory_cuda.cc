#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "capi/device_memory.h"

namespace korovod::capi {

Result<void*> allocate_device_memory(int device, size_t bytes) {
  // The background thread allocates outputs for tensors of any device: switch, then restore.
  int previous = -1;
  bool switched = false;
  cudaError_t e = cudaGetDevice(&previous);
  if (e == cudaSuccess && previous != device) {
    e = cudaSetDevice(device);
    switched = e == cudaSuccess;
  }
  void* data = nullptr;
  if (e == cudaSuccess) e = cudaMalloc(&data, bytes == 0 ? 1 : bytes);
  if (switched) (void)cudaSetDevice(previous);
  if (e != cudaSuccess) {
    return Status::unknown(fmt::format("cudaMalloc of {} bytes on GPU {} failed: {}", bytes, device,
                                       cudaGetErrorString(e)));
  }
  return data;
}

void free_device_memory(void* data) { (void)cudaFree(data); }

}  // namespace korovod::capi
