// Outputs the runtime allocates through the C ABI (allgather, alltoall, reducescatter): the
// allocator writes straight into memory the C ABI owns, on the tensor's device, and
// korovod_handle_take_dlpack hands that memory on to a DLPack tensor without a copy.
#pragma once

#include <mutex>
#include <vector>

#include "core/mutex.h"
#include "korovod/runtime.h"

namespace korovod {

// Host memory (64-byte aligned) or a CUDA device's, freed with it unless released.
class OwnedBuffer {
 public:
  static Result<OwnedBuffer> allocate(int device, size_t bytes);
  OwnedBuffer() = default;
  OwnedBuffer(OwnedBuffer&& other) noexcept { *this = std::move(other); }
  OwnedBuffer& operator=(OwnedBuffer&& other) noexcept;
  OwnedBuffer(const OwnedBuffer&) = delete;
  OwnedBuffer& operator=(const OwnedBuffer&) = delete;
  ~OwnedBuffer() { reset(); }

  void* data() const { return data_; }
  int device() const { return device_; }
  void reset();
  void* release();  // the caller frees it: free_buffer(data, device)

 private:
  void* data_ = nullptr;
  int device_ = kCpuDevice;
};

void free_buffer(void* data, int device);

// The output of one operation: filled on the background thread by the allocator, read by the
// caller once the handle is done; `taken` once moved into a DLPack tensor.
struct OutputSlot {
  OutputSlot(DataType dtype, int device) : dtype(dtype), device(device) {}
  const DataType dtype;
  const int device;
  Mutex mu;
  OwnedBuffer buffer KOROVOD_GUARDED_BY(mu);
  std::vector<int64_t> shape KOROVOD_GUARDED_BY(mu);
  bool allocated KOROVOD_GUARDED_BY(mu) = false;
  bool taken KOROVOD_GUARDED_BY(mu) = false;
  bool done KOROVOD_GUARDED_BY(mu) = false;  // the operation ended, with `status`
  Status status KOROVOD_GUARDED_BY(mu);
};

// The operation's allocator and done callback, writing into `slot`.
OutputAllocator allocator_for(std::shared_ptr<OutputSlot> slot);
DoneCallback done_callback_for(std::shared_ptr<OutputSlot> slot);

// Moves the slot's memory into a new DLPack DLManagedTensor (returned as void*: the C ABI's
// type) with DLPack type (dl_code, dl_bits, lanes 1); its deleter frees the memory and itself.
// Fails with the operation's error when it failed, and while it runs.
Result<void*> take_as_dlpack(OutputSlot& slot, int dl_code, int dl_bits);
void delete_dlpack(void* managed_tensor);

}  // namespace korovod
