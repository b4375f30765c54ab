// The host's processes behind ProcessLauncher (process_launcher.h): a Process is started with
// fork/execve in its own process group, with stdout and stderr on a pipe whose lines go to a sink
// (the prefixed console, a log file). The group is what a pod owns: signals go to the whole
// group (stop_process: SIGTERM, then SIGKILL after the grace period).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "local/process/process_launcher.h"
#include "local/sandbox/sandbox.h"

namespace local {

// What execve takes for an Exec: argv[0] resolved against env's PATH, and argv and envp
// ("NAME=value") as null-terminated arrays that point into this object. Built before a fork, so
// the child only calls execve. Throws std::invalid_argument for an empty argv, std::runtime_error
// when argv[0] is not found.
class ExecArgs {
 public:
  explicit ExecArgs(const Exec& exec);
  ExecArgs(const ExecArgs&) = delete;
  ExecArgs& operator=(const ExecArgs&) = delete;

  const std::string& program() const { return program_; }
  char* const* argv() const { return argv_.data(); }
  char* const* envp() const { return envp_.data(); }

 private:
  std::string program_;
  std::vector<std::string> args_, env_;
  std::vector<char*> argv_, envp_;
};

class Process final : public LaunchedProcess {
 public:
  // Starts exec.argv with exec.env (argv[0] is looked up in env's PATH). Throws on failure.
  Process(const Exec& exec, LineSink sink);
  ~Process() override;  // stops the group if it still runs (2 s grace), then joins the log pump
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  std::optional<int> poll() override;
  void signal(int signo) override;
  int wait() override;

 private:
  void pump();
  void ended(int status);  // records the exit code of a wait status, kills what is left in the group

  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::optional<int> exit_code_;
  std::atomic<bool> stop_pump_{false};
  LineSink sink_;
  std::thread pump_thread_;
};

// The production launcher: every process a Process.
class HostProcessLauncher final : public ProcessLauncher {
 public:
  std::unique_ptr<LaunchedProcess> start(const Exec& exec, LineSink sink) override {
    return std::make_unique<Process>(exec, std::move(sink));
  }
};

// Resolves a command name against a PATH value ("" when not found); names with '/' pass through.
std::string find_in_path(const std::string& name, const std::string& path);

}  // namespace local
