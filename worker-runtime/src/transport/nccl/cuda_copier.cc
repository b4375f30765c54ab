#include "transport/nccl/cuda_copier.h"

#include <fmt/format.h>

#include <cstring>

#include "transport/nccl/nccl_mapping.h"

namespace korovod::nccl {

CudaCopier::~CudaCopier() {
  for (cudaStream_t s : streams_) {
    if (s) cudaStreamDestroy(s);
  }
}

Result<int> CudaCopier::device_of(const void* p) {
  if (!p) return -1;
  cudaPointerAttributes attr{};
  const cudaError_t e = cudaPointerGetAttributes(&attr, p);
  if (e != cudaSuccess) {
    cudaGetLastError();  // must not linger as the sticky last error
    return cuda_status(e, "cudaPointerGetAttributes");
  }
  // Managed memory is readable from the host (after the ready event, nothing writes it).
  if (attr.type != cudaMemoryTypeDevice) return -1;
  last_device_ = attr.device;
  return attr.device;
}

Result<bool> CudaCopier::on_device(const void* p) {
  Result<int> device = device_of(p);
  if (!device.is_ok()) return device.status();
  return *device >= 0;
}

Status CudaCopier::make_current(int device) {
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current == device) return Status::ok();
  return cuda_status(cudaSetDevice(device), fmt::format("cudaSetDevice({})", device));
}

Result<cudaStream_t> CudaCopier::stream_for(int device) {
  if (device >= static_cast<int>(streams_.size())) streams_.resize(static_cast<size_t>(device) + 1, nullptr);
  cudaStream_t& s = streams_[static_cast<size_t>(device)];
  if (!s) {
    // A stream belongs to the device current when it is made; copies may use it from any device.
    KOROVOD_RETURN_IF_ERROR(make_current(device));
    KOROVOD_RETURN_IF_ERROR(cuda_status(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
                                        fmt::format("cudaStreamCreateWithFlags (GPU {})", device)));
  }
  return s;
}

Status CudaCopier::copy(void* dst, const void* src, int64_t bytes) {
  if (bytes <= 0 || dst == src) return Status::ok();
  Result<int> to = device_of(dst);
  if (!to.is_ok()) return to.status();
  Result<int> from = device_of(src);
  if (!from.is_ok()) return from.status();
  const int device = *to >= 0 ? *to : *from;
  if (device < 0) {  // host to host
    std::memcpy(dst, src, static_cast<size_t>(bytes));
    return Status::ok();
  }
  Result<cudaStream_t> stream = stream_for(device);
  if (!stream.is_ok()) return stream.status();
  const Status enqueued = cuda_status(
      cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDefault, *stream), "cudaMemcpyAsync");
  // Wait even after a failed enqueue: nothing may still be reading or writing the buffers.
  const Status synced = cuda_status(cudaStreamSynchronize(*stream), "cudaStreamSynchronize");
  return enqueued.is_ok() ? synced : enqueued;
}

Result<void*> CudaCopier::allocate_host(int64_t bytes) {
  if (last_device_ >= 0) KOROVOD_RETURN_IF_ERROR(make_current(last_device_));
  void* p = nullptr;
  KOROVOD_RETURN_IF_ERROR(cuda_status(cudaHostAlloc(&p, static_cast<size_t>(bytes), cudaHostAllocPortable),
                                      fmt::format("cudaHostAlloc of {} bytes", bytes)));
  return p;
}

void CudaCopier::free_host(void* p) { (void)cudaFreeHost(p); }

}  // namespace korovod::nccl
