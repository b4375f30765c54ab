#include "os/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <string_view>

namespace korovod::os {
namespace {

struct ChildFds {
  int in, out, err;
};

// errno as decimal digits into `buf` (strerror() is not async-signal-safe); the length.
size_t errno_digits(int e, char (&buf)[16]) {
  char rev[16];
  size_t n = 0;
  do {
    rev[n++] = static_cast<char>('0' + e % 10);
    e /= 10;
  } while (e > 0 && n < sizeof rev);
  for (size_t i = 0; i < n; ++i) buf[i] = rev[n - 1 - i];
  return n;
}

void write_str(const char* s) { (void)!write(2, s, std::strlen(s)); }

// In the child, between fork and exec: async-signal-safe calls only.
[[noreturn]] void exec_child(const ExecArrays& exec, const SpawnOptions& options, ChildFds fds, pid_t parent) {
  if (!options.new_session || setsid() < 0) setpgid(0, 0);
  if (options.parent_death_signal != 0) {
    prctl(PR_SET_PDEATHSIG, options.parent_death_signal);
    if (getppid() != parent) _exit(127);  // the parent died before the prctl
  }
  dup2(fds.in, 0);
  dup2(fds.out, 1);
  dup2(fds.err, 2);
  syscall(SYS_close_range, 3U, ~0U, 0U);  // sockets, other children's pipes, whatever else is open
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  execve(exec.program().c_str(), exec.argv(), exec.envp());
  char digits[16];
  const size_t n = errno_digits(errno, digits);
  write_str(options.who.c_str());
  write_str(": cannot execute ");
  write_str(exec.program().c_str());
  write_str(" (errno ");
  (void)!write(2, digits, n);
  write_str(")\n");
  _exit(127);
}

void write_stdin(const Fd& in, std::string_view data) {
  // A line far below the pipe's capacity: the write completes without the child reading, and
  // this side's read end, still open until spawn returns, spares it EPIPE / SIGPIPE.
  while (!data.empty()) {
    const ssize_t n = write(in.get(), data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the child is gone already: its exit code tells
    data.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace

std::string find_in_path(const std::string& name, const std::string& path) {
  if (name.find('/') != std::string::npos) return name;
  std::stringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

ExecArrays::ExecArrays(std::string program, const std::vector<std::string>& args, const EnvPairs& env)
    : program_(std::move(program)), words_(args) {
  for (const auto& [name, value] : env) words_.push_back(name + "=" + value);
  for (size_t i = 0; i < words_.size(); ++i) (i < args.size() ? argv_ : envp_).push_back(words_[i].data());
  argv_.push_back(nullptr);
  envp_.push_back(nullptr);
}

Result<ExecArrays> ExecArrays::resolve(const std::vector<std::string>& args, const EnvPairs& env) {
  if (args.empty()) return Status::invalid_argument("no command given");
  std::string path;
  for (const auto& [name, value] : env) {
    if (name == "PATH") path = value;  // the last one, as the pairs are read in order
  }
  std::string program = find_in_path(args[0], path);
  if (program.empty()) return Status::invalid_argument("'" + args[0] + "': command not found on PATH");
  return ExecArrays(std::move(program), args, env);
}

Result<Child> spawn(const ExecArrays& exec, const SpawnOptions& options) {
  Result<Pipe> out = make_pipe();
  if (!out.is_ok()) return out.status();
  Pipe err;
  if (!options.merge_output) {
    Result<Pipe> p = make_pipe();
    if (!p.is_ok()) return p.status();
    err = std::move(*p);
  }
  Pipe in;
  if (options.stdin_pipe) {
    Result<Pipe> p = make_pipe();
    if (!p.is_ok()) return p.status();
    in = std::move(*p);
  } else {
    in.read = Fd(open("/dev/null", O_RDONLY | O_CLOEXEC));
  }
  const ChildFds fds{in.read.get(), out->write.get(), options.merge_output ? out->write.get() : err.write.get()};
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return Status::unknown(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) exec_child(exec, options, fds, parent);
  // Also here, so that a signal sent right after the start reaches the group; not for a new
  // session, which setsid() can only start in a child that leads no group yet (the child may
  // still be before it: a caller signalling the group then signals the pid too).
  if (!options.new_session) setpgid(pid, pid);
  if (options.stdin_pipe && !options.stdin_data.empty()) write_stdin(in.write, options.stdin_data);
  Child child;
  child.pid = pid;
  child.out = std::move(out->read);
  child.err = std::move(err.read);
  child.in = std::move(in.write);
  return child;
}

int exit_code_from_wait_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

int wait_exit_code(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return 1;  // not our child (reaped elsewhere): nothing more to learn
  }
  return exit_code_from_wait_status(status);
}

namespace {

// Whether `pid` has ended, leaving it unreaped (WNOWAIT).
bool has_ended(pid_t pid, bool block) {
  siginfo_t info{};
  const int flags = WEXITED | WNOWAIT | (block ? 0 : WNOHANG);
  int r;
  while ((r = waitid(P_PID, static_cast<id_t>(pid), &info, flags)) != 0 && errno == EINTR) {
  }
  return r != 0 || info.si_pid == pid;  // an error (not our child): nothing left to wait for
}

}  // namespace

std::optional<int> reap_group_if_ended(pid_t pid) {
  if (!has_ended(pid, false)) return std::nullopt;
  kill(-pid, SIGKILL);
  return wait_exit_code(pid);
}

int wait_group(pid_t pid) {
  has_ended(pid, true);
  kill(-pid, SIGKILL);
  return wait_exit_code(pid);
}

}  // namespace korovod::os
