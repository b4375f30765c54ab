// korovod/cuda.h in a build without CUDA.
#include "korovod/cuda.h"

namespace korovod {

Result<std::shared_ptr<const ReadyEvent>> record_cuda_ready_event(void*) {
  return Status::precondition(
      "record_cuda_ready_event: this korovod was built without CUDA (KOROVOD_WITH_NCCL off or NCCL/CUDA not found)");
}

Result<std::shared_ptr<const ReadyEvent>> record_cuda_ready_event_on_device(int, void* stream) {
  return record_cuda_ready_event(stream);
}

}  // namespace korovod
