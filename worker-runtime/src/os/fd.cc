#include "os/fd.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace korovod::os {

void Fd::reset() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

Result<Pipe> make_pipe() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return Status::unknown(std::string("pipe2: ") + std::strerror(errno));
  return Pipe{Fd(fds[0]), Fd(fds[1])};
}

}  // namespace korovod::os
