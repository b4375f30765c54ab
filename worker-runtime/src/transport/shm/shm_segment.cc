#include "transport/shm/shm_segment.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace korovod::shm {
namespace {

Status sys_error(const char* what, const std::string& name) {
  return Status::unknown(fmt::format("shared memory: {} {}: {}", what, name, std::strerror(errno)));
}

}  // namespace

Segment::~Segment() {
  unlink();
  if (base_) munmap(base_, bytes_);
}

Segment::Segment(Segment&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)),
      bytes_(other.bytes_),
      name_(std::move(other.name_)),
      linked_(std::exchange(other.linked_, false)) {}

Segment& Segment::operator=(Segment&& other) noexcept {
  if (this != &other) {
    unlink();
    if (base_) munmap(base_, bytes_);
    base_ = std::exchange(other.base_, nullptr);
    bytes_ = other.bytes_;
    name_ = std::move(other.name_);
    linked_ = std::exchange(other.linked_, false);
  }
  return *this;
}

Result<Segment> Segment::create(const std::string& name, size_t bytes) {
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return sys_error("shm_open", name);
  Segment seg;
  seg.name_ = name;
  seg.linked_ = true;  // from here the destructor unlinks on every error path
  seg.bytes_ = bytes;
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    Status st = sys_error("ftruncate", name);
    close(fd);
    return st;
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return sys_error("mmap", name);
  seg.base_ = static_cast<std::byte*>(p);
  // Touch every page (tmpfs allocates on first write): a full /dev/shm fails here, at startup,
  // with a message, instead of SIGBUS in the middle of a collective.
  std::memset(seg.base_, 0, bytes);
  return seg;
}

Result<Segment> Segment::open(const std::string& name, size_t bytes) {
  int fd = shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) return sys_error("shm_open", name);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return sys_error("mmap", name);
  Segment seg;
  seg.base_ = static_cast<std::byte*>(p);
  seg.bytes_ = bytes;
  seg.name_ = name;
  return seg;
}

void Segment::unlink() {
  if (linked_) shm_unlink(name_.c_str());
  linked_ = false;
}

}  // namespace korovod::shm
