// The host's processes behind ProcessLauncher (process_launcher.h): a Process is started by
// os/spawn.h in its own process group and held as an os::ProcessGroup (os/process_group.h, the
// runtime's, which korovodrun holds its ranks with), with stdout and stderr on a pipe whose lines
// go to a sink (the prefixed console, a log file). The group is what a pod owns: signals go to
// the whole group (stop_process: SIGTERM, then SIGKILL after the grace period).
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
#include "os/process_group.h"
#include "os/spawn.h"

namespace local {

// What execve takes for an Exec (os/spawn.h: argv[0] resolved against env's PATH, built before a
// fork so that the child only calls execve). Throws std::invalid_argument for an empty argv and
// std::runtime_error when argv[0] is not found ("executable file not found in $PATH: <name>", as
// a container runtime says it).
korovod::os::ExecArrays exec_arrays(const Exec& exec);

class Process final : public LaunchedProcess {
 public:
  // Starts exec.argv with exec.env (argv[0] is looked up in env's PATH). Throws on failure.
  Process(const Exec& exec, LineSink sink);
  ~Process() override;  // stops the group if it still runs (2 s grace), then joins the log pump
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return group_.pid(); }
  std::optional<int> poll() override;
  void signal(int signo) override;
  int wait() override;

 private:
  void pump();

  korovod::os::ProcessGroup group_;
  korovod::os::Fd out_;  // stdout and stderr, taken from group_ for the pump thread
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

}  // namespace local
