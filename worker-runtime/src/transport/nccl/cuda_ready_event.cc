// korovod/cuda.h with CUDA: a ReadyEvent over a cudaEvent_t (timing off: only ordering is needed).
#include <cuda_runtime_api.h>

#include "korovod/cuda.h"
#include "transport/nccl/nccl_mapping.h"

namespace korovod {
namespace {

class CudaReadyEvent final : public ReadyEvent {
 public:
  explicit CudaReadyEvent(cudaEvent_t event) : event_(event) {}
  ~CudaReadyEvent() override { cudaEventDestroy(event_); }
  CudaReadyEvent(const CudaReadyEvent&) = delete;
  CudaReadyEvent& operator=(const CudaReadyEvent&) = delete;

  Result<bool> ready() const override {
    const cudaError_t e = cudaEventQuery(event_);
    if (e == cudaSuccess) return true;
    if (e == cudaErrorNotReady) return false;
    return nccl::cuda_status(e, "cudaEventQuery");
  }

 private:
  cudaEvent_t event_;
};

}  // namespace

Result<std::shared_ptr<const ReadyEvent>> record_cuda_ready_event(void* stream) {
  cudaEvent_t event = nullptr;
  KOROVOD_RETURN_IF_ERROR(
      nccl::cuda_status(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreateWithFlags"));
  auto ready = std::make_shared<const CudaReadyEvent>(event);  // owns the event from here on
  KOROVOD_RETURN_IF_ERROR(
      nccl::cuda_status(cudaEventRecord(event, static_cast<cudaStream_t>(stream)), "cudaEventRecord"));
  return std::shared_ptr<const ReadyEvent>(ready);
}

Result<std::shared_ptr<const ReadyEvent>> record_cuda_ready_event_on_device(int device, void* stream) {
  int previous = -1;
  KOROVOD_RETURN_IF_ERROR(nccl::cuda_status(cudaGetDevice(&previous), "cudaGetDevice"));
  if (previous != device) {
    KOROVOD_RETURN_IF_ERROR(nccl::cuda_status(cudaSetDevice(device), "cudaSetDevice"));
  }
  Result<std::shared_ptr<const ReadyEvent>> event = record_cuda_ready_event(stream);
  if (previous != device) (void)cudaSetDevice(previous);
  return event;
}

}  // namespace korovod
