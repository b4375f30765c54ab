#include "local/process/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace local {

std::string find_in_path(const std::string& name, const std::string& path) {
  if (name.find('/') != std::string::npos) return name;
  std::stringstream ss(path);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

ExecArgs::ExecArgs(const Exec& exec) : args_(exec.argv) {
  if (args_.empty()) throw std::invalid_argument("empty command");
  program_ = find_in_path(args_[0], get_env(exec.env, "PATH").value_or(""));
  if (program_.empty()) throw std::runtime_error("executable file not found in $PATH: " + args_[0]);
  for (const auto& [k, v] : exec.env) env_.push_back(k + "=" + v);
  for (auto& a : args_) argv_.push_back(a.data());
  for (auto& e : env_) envp_.push_back(e.data());
  argv_.push_back(nullptr);
  envp_.push_back(nullptr);
}

Process::Process(const Exec& exec, LineSink sink) : sink_(std::move(sink)) {
  const ExecArgs args(exec);

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe: " + std::string(strerror(errno)));
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork: " + std::string(strerror(errno)));
  if (pid_ == 0) {  // child: only async-signal-safe calls from here
    setpgid(0, 0);
    int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execve(args.program().c_str(), args.argv(), args.envp());
    const char msg[] = "korovod: exec failed\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(127);
  }
  setpgid(pid_, pid_);  // also here, so a signal sent right after start reaches the group
  close(fds[1]);
  out_fd_ = fds[0];
  pump_thread_ = std::thread([this] { pump(); });
}

Process::~Process() {
  if (!exit_code_) {
    kube::RealClock clock;
    stop_process(*this, std::chrono::milliseconds(2000), clock);
  }
  stop_pump_ = true;
  if (pump_thread_.joinable()) pump_thread_.join();
  if (out_fd_ >= 0) close(out_fd_);
}

void Process::pump() {
  std::string pending;
  char buf[4096];
  // Ends at EOF, or once asked to stop after the process ended (a leftover child may hold the
  // pipe open).
  while (true) {
    pollfd p{out_fd_, POLLIN, 0};
    int r = ::poll(&p, 1, 200);
    if (r == 0) {
      if (stop_pump_) break;
      continue;
    }
    ssize_t n = read(out_fd_, buf, sizeof buf);
    if (n <= 0) break;
    pending.append(buf, size_t(n));
    size_t nl;
    while ((nl = pending.find('\n')) != std::string::npos) {
      sink_(pending.substr(0, nl));
      pending.erase(0, nl + 1);
    }
  }
  if (!pending.empty()) sink_(pending);
}

void Process::ended(int status) {
  exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  // Anything the main process left in its group goes with it, as with a container's init.
  kill(-pid_, SIGKILL);
}

std::optional<int> Process::poll() {
  if (exit_code_) return exit_code_;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) ended(status);
  return exit_code_;
}

void Process::signal(int signo) {
  if (!exit_code_) kill(-pid_, signo);
}

int Process::wait() {
  if (exit_code_) return *exit_code_;
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  ended(status);
  return *exit_code_;
}

}  // namespace local
