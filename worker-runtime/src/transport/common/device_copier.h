// The GPU side of host staging (staging_backend.h): what it needs to know about a pointer and
// how it moves bytes between device and host memory. The CUDA implementation
// (src/transport/nccl/cuda_copier.cc) copies on its own stream and synchronizes; the fake one
// (src/transport/fake/fake_device_copier.h) keeps "device" memory in host pages that the host may
// touch only through the copier, so the staging logic is tested on a machine without a GPU.
#pragma once

#include <cstdint>
#include <string>

#include "korovod/status.h"

namespace korovod {

class DeviceCopier {
 public:
  virtual ~DeviceCopier() = default;
  // Whether the host may not read or write `p` directly (device memory). Host memory, pinned or
  // not, and memory both sides can touch (CUDA managed memory) are not. False for null.
  virtual Result<bool> on_device(const void* p) = 0;
  // Copies `bytes` from `src` to `dst`, either of which may be device or host memory; done when
  // it returns. Called only after the tensor's ready event fired (the engine waits for it).
  virtual Status copy(void* dst, const void* src, int64_t bytes) = 0;
  // Host memory the copies are fastest with (pinned), at least `bytes` (and never null);
  // released with free_host.
  virtual Result<void*> allocate_host(int64_t bytes) = 0;
  virtual void free_host(void* p) = 0;
};

}  // namespace korovod
