// Device memory for outputs the C ABI allocates for CUDA tensors (device_memory_cuda.cc in a
// CUDA build, device_memory_none.cc otherwise: an error saying so).
#pragma once

#include <cstddef>

#include "korovod/status.h"

namespace korovod::capi {

// cudaMalloc on `device` (the calling thread's current device is restored afterwards).
Result<void*> allocate_device_memory(int device, size_t bytes);
void free_device_memory(void* data);  // cudaFree; any device

}  // namespace korovod::capi
