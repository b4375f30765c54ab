#include "transport/fake/fake_device_copier.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace korovod::fake {
namespace {

size_t page_size() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

void protect(uintptr_t start, size_t length, int prot) {
  if (mprotect(reinterpret_cast<void*>(start), length, prot) != 0) {
    std::perror("fake device memory: mprotect");
    std::abort();
  }
}

}  // namespace

FakeDeviceMemory::~FakeDeviceMemory() {
  for (const auto& [start, region] : regions_) munmap(reinterpret_cast<void*>(start), region.length);
}

void* FakeDeviceMemory::allocate(size_t bytes) {
  const size_t page = page_size();
  const size_t length = std::max<size_t>((bytes + page - 1) / page, 1) * page;
  void* p = mmap(nullptr, length, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    std::perror("fake device memory: mmap");
    std::abort();
  }
  MutexLock lock(mu_);
  regions_[reinterpret_cast<uintptr_t>(p)] = Region{length, 0};
  return p;
}

void FakeDeviceMemory::free(void* p) {
  MutexLock lock(mu_);
  auto it = regions_.find(reinterpret_cast<uintptr_t>(p));
  if (it == regions_.end()) return;
  munmap(p, it->second.length);
  regions_.erase(it);
}

uintptr_t FakeDeviceMemory::find(const void* p) const {
  const auto addr = reinterpret_cast<uintptr_t>(p);
  auto it = regions_.upper_bound(addr);
  if (it == regions_.begin()) return 0;
  --it;
  return addr < it->first + it->second.length ? it->first : 0;
}

bool FakeDeviceMemory::contains(const void* p) const {
  MutexLock lock(mu_);
  return p != nullptr && find(p) != 0;
}

void FakeDeviceMemory::open(uintptr_t start) {
  Region& r = regions_.at(start);
  if (r.open++ == 0) protect(start, r.length, PROT_READ | PROT_WRITE);
}

void FakeDeviceMemory::close(uintptr_t start) {
  Region& r = regions_.at(start);
  if (--r.open == 0) protect(start, r.length, PROT_NONE);
}

void FakeDeviceMemory::copy(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  uintptr_t to = 0, from = 0;
  {
    MutexLock lock(mu_);
    to = find(dst);
    from = find(src);
    if (to) open(to);
    if (from) open(from);
  }
  std::memmove(dst, src, bytes);
  MutexLock lock(mu_);
  if (to) close(to);
  if (from) close(from);
}

void FakeDeviceMemory::upload(void* device, const void* host, size_t bytes) { copy(device, host, bytes); }
void FakeDeviceMemory::download(void* host, const void* device, size_t bytes) { copy(host, device, bytes); }

FakeDeviceCopier::~FakeDeviceCopier() = default;

Status FakeDeviceCopier::copy(void* dst, const void* src, int64_t bytes) {
  const int fail_in = fail_in_.load();
  if (fail_in == 0) {
    fail_in_ = -1;
    return Status::unknown("fake copy failed: " + fail_message_);
  }
  if (fail_in > 0) fail_in_ = fail_in - 1;
  if (memory_->contains(src)) ++to_host_;
  if (memory_->contains(dst)) ++to_device_;
  memory_->copy(dst, src, static_cast<size_t>(bytes));
  return Status::ok();
}

Result<void*> FakeDeviceCopier::allocate_host(int64_t bytes) {
  auto buffer = std::make_unique<std::byte[]>(static_cast<size_t>(std::max<int64_t>(bytes, 1)));
  void* p = buffer.get();
  host_[p] = std::move(buffer);
  return p;
}

void FakeDeviceCopier::free_host(void* p) { host_.erase(p); }

void FakeDeviceCopier::fail_copy_after(int ok_copies, std::string message) {
  fail_message_ = std::move(message);
  fail_in_ = ok_copies;
}

}  // namespace korovod::fake
