#include "orphan_guard.h"

#include "os/spawn.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <string>
#include <thread>

namespace korovod::launcher {
namespace {

// SIGTERM, then SIGKILL to whatever is left when the grace period is over.
void end_groups(std::set<pid_t> groups, std::chrono::milliseconds grace) {
  for (pid_t g : groups) kill(-g, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (!groups.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::erase_if(groups, [](pid_t g) { return kill(-g, 0) != 0 && errno == ESRCH; });
  }
  for (pid_t g : groups) kill(-g, SIGKILL);
}

// The guard's whole life: collect "+<pgid>" / "-<pgid>" lines until "done" or end of file.
[[noreturn]] void guard_main(int in, std::chrono::milliseconds grace) {
  setsid();  // out of korovodrun's group and terminal: a Ctrl-C there is korovodrun's to handle
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) signal(s, SIG_IGN);
  std::set<pid_t> groups;
  std::string pending;
  bool done = false;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(in, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buf, static_cast<size_t>(n));
    for (size_t nl; (nl = pending.find('\n')) != std::string::npos; pending.erase(0, nl + 1)) {
      const std::string line = pending.substr(0, nl);
      if (line == "done") done = true;
      if (line.size() < 2) continue;
      const pid_t group = static_cast<pid_t>(std::atol(line.c_str() + 1));
      if (line[0] == '+') groups.insert(group);
      if (line[0] == '-') groups.erase(group);
    }
  }
  if (!done) end_groups(groups, grace);
  _exit(0);
}

}  // namespace

Result<std::unique_ptr<OrphanGuard>> OrphanGuard::start(std::chrono::milliseconds grace) {
  Result<os::Pipe> pipe = os::make_pipe();
  if (!pipe.is_ok()) return pipe.status();
  os::Fd read_end = std::move(pipe->read), write_end = std::move(pipe->write);
  const pid_t pid = fork();
  if (pid < 0) return Status::unknown(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) {
    write_end.reset();
    const int in = read_end.release();
    // Keep nothing of korovodrun open (a console pipe held here would keep a reader waiting).
    if (in != 3) {
      dup2(in, 3);
      close(in);
    }
    for (int fd : {0, 1, 2}) close(fd);
    syscall(SYS_close_range, 4U, ~0U, 0U);
    guard_main(3, grace);
  }
  return std::unique_ptr<OrphanGuard>(new OrphanGuard(std::move(write_end), pid));
}

OrphanGuard::~OrphanGuard() {
  if (pipe_.valid()) {
    const char done[] = "done\n";
    (void)!::write(pipe_.get(), done, sizeof done - 1);
    pipe_.reset();
  }
  reap_guard();
}

void OrphanGuard::send(char op, pid_t group) {
  if (!pipe_.valid()) return;
  const std::string line = fmt::format("{}{}\n", op, group);
  // Short lines on a pipe are written whole (PIPE_BUF); a guard that died cannot be helped.
  (void)!::write(pipe_.get(), line.data(), line.size());
}

void OrphanGuard::watch(pid_t group) { send('+', group); }
void OrphanGuard::forget(pid_t group) { send('-', group); }

void OrphanGuard::abandon() {
  pipe_.reset();
  reap_guard();
}

void OrphanGuard::reap_guard() {
  if (guard_ <= 0) return;
  os::wait_exit_code(guard_);
  guard_ = -1;
}

}  // namespace korovod::launcher
