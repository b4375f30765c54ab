#include "capi/output_buffer.h"

#include <fmt/format.h>

#include <cstdlib>

#include "capi/device_memory.h"
#include "capi/dlpack.h"

namespace korovod {
namespace {

constexpr size_t kHostAlignment = 64;

// What a DLPack tensor from take_as_dlpack owns; manager_ctx points back at it.
struct DlpackHolder {
  dlpack::ManagedTensor managed{};
  std::vector<int64_t> shape;
  OwnedBuffer buffer;
};

void delete_holder(dlpack::ManagedTensor* self) {
  delete static_cast<DlpackHolder*>(self->manager_ctx);
}

}  // namespace

Result<OwnedBuffer> OwnedBuffer::allocate(int device, size_t bytes) {
  OwnedBuffer b;
  b.device_ = device;
  if (device == kCpuDevice) {
    // aligned_alloc wants a multiple of the alignment; one byte at least, so data is never null.
    const size_t rounded = (bytes + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
    b.data_ = std::aligned_alloc(kHostAlignment, rounded == 0 ? kHostAlignment : rounded);
    if (!b.data_) return Status::unknown(fmt::format("could not allocate {} bytes of host memory", bytes));
    return b;
  }
  Result<void*> d = capi::allocate_device_memory(device, bytes);
  if (!d.is_ok()) return d.status();
  b.data_ = *d;
  return b;
}

OwnedBuffer& OwnedBuffer::operator=(OwnedBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = other.data_;
    device_ = other.device_;
    other.data_ = nullptr;
  }
  return *this;
}

void OwnedBuffer::reset() {
  if (data_) free_buffer(data_, device_);
  data_ = nullptr;
}

void* OwnedBuffer::release() {
  void* d = data_;
  data_ = nullptr;
  return d;
}

void free_buffer(void* data, int device) {
  if (device == kCpuDevice) {
    std::free(data);
  } else {
    capi::free_device_memory(data);
  }
}

OutputAllocator allocator_for(std::shared_ptr<OutputSlot> slot) {
  return [slot = std::move(slot)](const std::vector<int64_t>& shape) -> Result<void*> {
    int64_t numel = 1;
    for (int64_t d : shape) numel *= d;
    Result<OwnedBuffer> b = OwnedBuffer::allocate(slot->device, static_cast<size_t>(numel) * element_size(slot->dtype));
    if (!b.is_ok()) return b.status();
    MutexLock lock(slot->mu);
    slot->buffer = std::move(b).value();
    slot->shape = shape;
    slot->allocated = true;
    return slot->buffer.data();
  };
}

DoneCallback done_callback_for(std::shared_ptr<OutputSlot> slot) {
  return [slot = std::move(slot)](const Status& status, const OpOutput&) {
    MutexLock lock(slot->mu);
    slot->done = true;
    slot->status = status;
  };
}

Result<void*> take_as_dlpack(OutputSlot& slot, int dl_code, int dl_bits) {
  if (dl_code < 0 || dl_code > 255 || dl_bits != 8 * element_size(slot.dtype)) {
    return Status::invalid_argument(fmt::format("DLPack type (code {}, bits {}) does not fit a {} output", dl_code,
                                                dl_bits, dtype_name(slot.dtype)));
  }
  MutexLock lock(slot.mu);
  if (!slot.done) return Status::invalid_argument("the operation has not finished");
  if (!slot.status.is_ok()) return slot.status;
  if (slot.taken) return Status::invalid_argument("the output was already taken");
  if (!slot.allocated) return Status::invalid_argument("the operation produced no output");
  auto holder = std::make_unique<DlpackHolder>();
  holder->shape = slot.shape;
  holder->buffer = std::move(slot.buffer);
  slot.taken = true;
  dlpack::Tensor& t = holder->managed.dl_tensor;
  t.data = holder->buffer.data();
  t.device = {slot.device == kCpuDevice ? dlpack::kDLCPU : dlpack::kDLCUDA,
              slot.device == kCpuDevice ? 0 : slot.device};
  t.ndim = static_cast<int32_t>(holder->shape.size());
  t.dtype = {static_cast<uint8_t>(dl_code), static_cast<uint8_t>(dl_bits), 1};
  t.shape = holder->shape.data();
  t.strides = nullptr;
  t.byte_offset = 0;
  holder->managed.manager_ctx = holder.get();
  holder->managed.deleter = &delete_holder;
  return static_cast<void*>(&holder.release()->managed);
}

void delete_dlpack(void* managed_tensor) {
  auto* m = static_cast<dlpack::ManagedTensor*>(managed_tensor);
  if (m && m->deleter) m->deleter(m);
}

}  // namespace korovod
