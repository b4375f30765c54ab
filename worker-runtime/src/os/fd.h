// The operating system's pieces that more than one program of the project needs: an owning file
// descriptor (the TCP transport's sockets, korovodrun's and local mode's pipes), starting a
// process in a group of its own (spawn.h) and finding the children left to a subreaper
// (children.h). Below every layer of the runtime; korovodrun and operator/local link it too.
// Error model: the runtime's (korovod::Status / Result), which operator/local turns into its
// exceptions where it calls in.
#pragma once

#include "korovod/status.h"

namespace korovod::os {

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = o.release();
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  void reset();

 private:
  int fd_ = -1;
};

struct Pipe {
  Fd read, write;
};
// Both ends close-on-exec.
Result<Pipe> make_pipe();

}  // namespace korovod::os
