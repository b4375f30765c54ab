// GPU helpers for framework bindings. Declared whatever the build; without CUDA
// (KOROVOD_WITH_NCCL off or not found) they return an error saying so.
#pragma once

#include <memory>

#include "korovod/runtime.h"

namespace korovod {

// Records a CUDA event on `stream` (a cudaStream_t; null = the legacy default stream) of the
// calling thread's current device and returns it as a ReadyEvent: pass it as
// CollectiveArgs::ready_event for a tensor the framework produced on that stream, and the
// collective waits until the stream has passed that point.
Result<std::shared_ptr<const ReadyEvent>> record_cuda_ready_event(void* stream);

// The same on `device`'s stream, from any thread: makes `device` current for the recording and
// restores the thread's previous device afterwards (the C ABI's korovod_cuda_event_record).
Result<std::shared_ptr<const ReadyEvent>> record_cuda_ready_event_on_device(int device, void* stream);

}  // namespace korovod
