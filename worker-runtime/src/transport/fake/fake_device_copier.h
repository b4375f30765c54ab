// A DeviceCopier for tests without a GPU (host staging, staging_backend.h). Its "device" memory
// is host memory mapped PROT_NONE: only the copier (and the test, through upload/download)
// opens it, for the length of one copy, so staging code that reads or writes a device pointer
// directly crashes the test as it would crash on a real GPU. Copies can be made to fail, and
// are counted by direction.
#pragma once

#include <atomic>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/mutex.h"
#include "transport/common/device_copier.h"

namespace korovod::fake {

// The fake GPU's memory, shared by a test and the copiers of its ranks (thread-safe).
class FakeDeviceMemory {
 public:
  FakeDeviceMemory() = default;
  ~FakeDeviceMemory();  // unmaps what is still allocated
  FakeDeviceMemory(const FakeDeviceMemory&) = delete;
  FakeDeviceMemory& operator=(const FakeDeviceMemory&) = delete;

  void* allocate(size_t bytes);  // never null (aborts when mmap fails); at least one page
  void free(void* p);
  bool contains(const void* p) const;
  // Host <-> device for the test itself (and the copier): opens the pages for this copy only.
  void upload(void* device, const void* host, size_t bytes);
  void download(void* host, const void* device, size_t bytes);
  void copy(void* dst, const void* src, size_t bytes);  // either side device or host

 private:
  struct Region {
    size_t length = 0;  // mapped bytes (whole pages)
    int open = 0;       // copies in progress: readable and writable while > 0
  };
  // The region holding p (its start), or 0.
  uintptr_t find(const void* p) const KOROVOD_REQUIRES(mu_);
  void open(uintptr_t start) KOROVOD_REQUIRES(mu_);
  void close(uintptr_t start) KOROVOD_REQUIRES(mu_);

  mutable Mutex mu_;
  std::map<uintptr_t, Region> regions_ KOROVOD_GUARDED_BY(mu_);
};

class FakeDeviceCopier final : public DeviceCopier {
 public:
  explicit FakeDeviceCopier(std::shared_ptr<FakeDeviceMemory> memory) : memory_(std::move(memory)) {}
  ~FakeDeviceCopier() override;

  Result<bool> on_device(const void* p) override { return memory_->contains(p); }
  Status copy(void* dst, const void* src, int64_t bytes) override;
  Result<void*> allocate_host(int64_t bytes) override;
  void free_host(void* p) override;

  // The copy after `ok_copies` more successful ones fails with an error carrying `message`.
  void fail_copy_after(int ok_copies, std::string message);
  // Copies so far that read device memory (to the host) and that wrote it (to the device).
  int copies_to_host() const { return to_host_.load(); }
  int copies_to_device() const { return to_device_.load(); }
  int host_buffers() const { return static_cast<int>(host_.size()); }

 private:
  std::shared_ptr<FakeDeviceMemory> memory_;
  // Set by the test, used by the thread running the collectives.
  std::atomic<int> fail_in_{-1};  // copies until the failing one; -1 = none
  std::string fail_message_;      // written before fail_in_
  std::atomic<int> to_host_{0}, to_device_{0};
  std::map<void*, std::unique_ptr<std::byte[]>> host_;  // allocate_host's buffers
};

}  // namespace korovod::fake
