#include "job_signals.h"

#include <fmt/format.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace korovod::launcher {
namespace {

sigset_t job_signals(bool with_sigpipe) {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&set, s);
  if (with_sigpipe) sigaddset(&set, SIGPIPE);
  return set;
}

}  // namespace

JobSignalBlock::JobSignalBlock() {
  const sigset_t set = job_signals(true);
  pthread_sigmask(SIG_BLOCK, &set, &previous_);
  // An ignored signal never reaches the signalfd. A shell starts background jobs with SIGINT
  // ignored; korovodrun still ends the job on SIGINT there, as horovodrun (which sets its own
  // handler) does. SIGHUP keeps what it was given, so that `nohup korovodrun ...` outlives the
  // terminal.
  for (int s : {SIGINT, SIGTERM}) signal(s, SIG_DFL);
}

JobSignalBlock::~JobSignalBlock() {
  // Signals that came in meanwhile stay pending (and are delivered with the old mask): drain
  // the job's own ones first so that restoring the mask does not kill the caller with them.
  const sigset_t set = job_signals(false);
  const timespec zero{0, 0};
  while (sigtimedwait(&set, nullptr, &zero) > 0) {
  }
  pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
}

Result<JobSignalFd> JobSignalFd::open() {
  const sigset_t set = job_signals(false);
  const int fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd < 0) return Status::unknown(fmt::format("signalfd: {}", std::strerror(errno)));
  return JobSignalFd(os::Fd(fd));
}

std::optional<int> JobSignalFd::next() {
  signalfd_siginfo info;
  for (;;) {
    const ssize_t n = read(fd_.get(), &info, sizeof info);
    if (n == static_cast<ssize_t>(sizeof info)) return static_cast<int>(info.ssi_signo);
    if (n < 0 && errno == EINTR) continue;
    return std::nullopt;
  }
}

}  // namespace korovod::launcher
