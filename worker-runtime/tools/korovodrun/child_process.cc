#include "child_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

namespace korovod::launcher {
namespace {

Result<std::pair<tcp::Fd, tcp::Fd>> make_pipe() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return Status::unknown(fmt::format("pipe2: {}", std::strerror(errno)));
  return std::make_pair(tcp::Fd(fds[0]), tcp::Fd(fds[1]));
}

// In the child, between fork and exec: async-signal-safe calls only.
[[noreturn]] void exec_child(const char* program, char* const* argv, char* const* envp, int in_fd, int out_fd,
                             int err_fd, pid_t parent) {
  setpgid(0, 0);
  // korovodrun killed outright (SIGKILL): the rank still ends. Checked against a parent that
  // died before the prctl.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) _exit(127);
  dup2(in_fd, 0);
  dup2(out_fd, 1);
  dup2(err_fd, 2);
  syscall(SYS_close_range, 3U, ~0U, 0U);  // the store's sockets and every other rank's pipes
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  execve(program, argv, envp);
  // strerror() is not async-signal-safe: the errno number, written by hand.
  char digits[16];
  int n = 0;
  for (int e = errno; e > 0 && n < 15; e /= 10) digits[15 - ++n] = static_cast<char>('0' + e % 10);
  const char prefix[] = "korovodrun: cannot execute ";
  const char middle[] = " (errno ";
  (void)!write(2, prefix, sizeof prefix - 1);
  (void)!write(2, program, std::strlen(program));
  (void)!write(2, middle, sizeof middle - 1);
  (void)!write(2, digits + 15 - n, static_cast<size_t>(n));
  (void)!write(2, ")\n", 2);
  _exit(127);
}

}  // namespace

ExecArrays::ExecArrays(const std::vector<std::string>& args, const EnvMap& env) {
  words = args;
  for (const auto& [name, value] : env) words.push_back(fmt::format("{}={}", name, value));
  for (size_t i = 0; i < words.size(); ++i) (i < args.size() ? argv : envp).push_back(words[i].data());
  argv.push_back(nullptr);
  envp.push_back(nullptr);
}

std::string find_in_path(const std::string& name, const std::string& path) {
  if (name.find('/') != std::string::npos) return name;
  std::stringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = fmt::format("{}/{}", dir.empty() ? std::string(".") : dir, name);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

Result<ChildProcess> spawn_process(const ProcessSpec& spec) {
  if (spec.argv.empty()) return Status::invalid_argument("no command given");
  auto path = spec.env.find("PATH");
  const std::string program = find_in_path(spec.argv[0], path == spec.env.end() ? "" : path->second);
  if (program.empty()) return Status::invalid_argument(fmt::format("{:?}: command not found on PATH", spec.argv[0]));
  ExecArrays arrays(spec.argv, spec.env);

  auto out = make_pipe(), err = make_pipe();
  if (!out.is_ok()) return out.status();
  if (!err.is_ok()) return err.status();
  tcp::Fd stdin_read, stdin_write;
  if (spec.stdin_pipe) {
    auto in = make_pipe();
    if (!in.is_ok()) return in.status();
    stdin_read = std::move(in->first);
    stdin_write = std::move(in->second);
  } else {
    stdin_read = tcp::Fd(open("/dev/null", O_RDONLY | O_CLOEXEC));
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return Status::unknown(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) {
    exec_child(program.c_str(), arrays.argv.data(), arrays.envp.data(), stdin_read.get(), out->second.get(), err->second.get(),
               parent);
  }
  setpgid(pid, pid);  // also here, so a signal sent right after the start reaches the group
  if (!spec.stdin_data.empty()) {
    // A line far below the pipe's capacity (64 KiB): the write completes without the child
    // reading, and this side's read end, still open, spares it EPIPE / SIGPIPE.
    std::string_view data = spec.stdin_data;
    while (!data.empty()) {
      const ssize_t n = write(stdin_write.get(), data.data(), data.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // the child is gone already: its exit code tells
      data.remove_prefix(static_cast<size_t>(n));
    }
  }
  ChildProcess child;
  child.pid = pid;
  child.out = std::move(out->first);
  child.err = std::move(err->first);
  child.in = std::move(stdin_write);
  return child;
}

Result<std::string> capture_output(const ProcessSpec& spec, bool include_stderr) {
  Result<ChildProcess> child = spawn_process(spec);
  if (!child.is_ok()) return child.status();
  std::string text, err_text;
  char buf[4096];
  pollfd fds[2] = {{child->out.get(), POLLIN, 0}, {child->err.get(), POLLIN, 0}};
  for (int open_fds = 2; open_fds > 0;) {
    if (poll(fds, 2, -1) < 0 && errno != EINTR) break;
    for (pollfd& p : fds) {
      if (p.fd < 0 || p.revents == 0) continue;
      const ssize_t n = read(p.fd, buf, sizeof buf);
      if (n > 0) {
        (include_stderr || &p == &fds[0] ? text : err_text).append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        p.fd = -1;  // poll() skips negative descriptors
        --open_fds;
      }
    }
  }
  int status = 0;
  while (waitpid(child->pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (exit_code_from_wait_status(status) != 0) {
    return Status::unknown(
        fmt::format("{} exited with code {}: {}{}", spec.argv[0], exit_code_from_wait_status(status), text, err_text));
  }
  return text;
}

int exit_code_from_wait_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace korovod::launcher
