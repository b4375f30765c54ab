// The signals korovodrun reacts to (SIGINT, SIGTERM, SIGHUP: end the job; SIGCHLD: a rank ended)
// arrive on a file descriptor the supervisor polls along with the ranks' output, instead of in
// a handler: no global state, no work in signal context. For that they must be blocked in every
// thread, so JobSignalBlock is made before korovodrun starts any (the store's server thread
// inherits the mask). SIGPIPE is blocked too: a closed console then is a write error, not death.
// Children get an empty mask back before exec (child_process.cc).
#pragma once

#include <signal.h>

#include <optional>

#include "korovod/status.h"
#include "os/fd.h"

namespace korovod::launcher {

class JobSignalBlock {
 public:
  JobSignalBlock();   // blocks the job signals in the calling thread
  ~JobSignalBlock();  // restores the mask it found
  JobSignalBlock(const JobSignalBlock&) = delete;
  JobSignalBlock& operator=(const JobSignalBlock&) = delete;

 private:
  sigset_t previous_;
};

class JobSignalFd {
 public:
  // A nonblocking signalfd for SIGINT, SIGTERM, SIGHUP and SIGCHLD (which must be blocked).
  static Result<JobSignalFd> open();
  int fd() const { return fd_.get(); }
  // The next pending signal number, or nothing when none is pending.
  std::optional<int> next();

 private:
  explicit JobSignalFd(os::Fd fd) : fd_(std::move(fd)) {}
  os::Fd fd_;
};

}  // namespace korovod::launcher
