// The seam between the pod runtime and the host's processes: a ProcessLauncher starts a process
// (argv, env, and through argv the working directory and sandbox: sandbox.h's Exec) in its own
// process group, and the LaunchedProcess it returns is polled, signalled and waited on. The pod
// runtime and ssh mode take a ProcessLauncher&: production passes HostProcessLauncher
// (process.h, fork/execve), unit tests a fake that records what was started and decides how it
// ends, so they check the wiring without real processes or real time.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kube/clock.h"
#include "local/sandbox/sandbox.h"

namespace local {

using LineSink = std::function<void(const std::string& line)>;

// A started process and its group, owned by whoever started it.
class LaunchedProcess {
 public:
  virtual ~LaunchedProcess() = default;
  // The exit code once the process ended (128 + signal number when killed by a signal); does
  // not block.
  virtual std::optional<int> poll() = 0;
  // Sends `signo` to the process's group: the process and everything it started there.
  virtual void signal(int signo) = 0;
  // Blocks until the process ended; its exit code, as poll() gives it.
  virtual int wait() = 0;
};

class ProcessLauncher {
 public:
  virtual ~ProcessLauncher() = default;
  // Starts exec.argv with exec.env and nothing else (argv[0] is looked up in env's PATH), stdin
  // /dev/null, in a new process group; every line of its stdout and stderr goes to `sink`, from
  // another thread. Throws std::invalid_argument for an empty argv and std::runtime_error when
  // the program is not found or cannot be started.
  virtual std::unique_ptr<LaunchedProcess> start(const Exec& exec, LineSink sink) = 0;
};

// SIGTERM to the group, up to `grace` on `clock` for the process to end, then SIGKILL; returns
// the exit code.
int stop_process(LaunchedProcess& process, std::chrono::milliseconds grace, kube::Clock& clock);

struct RunResult {
  int exit_code = 0;
  std::vector<std::string> output;  // stdout and stderr lines, in the order they came
};
// Starts exec and waits for it to end (what std::system did, with the output kept so that an
// error can show it). Throws as ProcessLauncher::start.
RunResult run_to_end(ProcessLauncher& launcher, const Exec& exec);

}  // namespace local
