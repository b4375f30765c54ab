// One container process: started in its own process group with stdout and stderr on a pipe,
// whose lines go to a sink (the prefixed console, a log file). The group is what a pod owns:
// stopping it signals the whole group (SIGTERM, then SIGKILL after the grace period).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "local/sandbox.h"

namespace local {

using LineSink = std::function<void(const std::string& line)>;

class Process {
 public:
  // Starts exec.argv with exec.env (argv[0] is looked up in env's PATH). Throws on failure.
  Process(const Exec& exec, LineSink sink);
  ~Process();  // stops the group if it still runs, then joins the log pump
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  // The exit code once the process ended (128 + signal number when killed by a signal).
  std::optional<int> poll();
  // SIGTERM to the group, up to `grace` for it to end, then SIGKILL; returns the exit code.
  int stop(std::chrono::milliseconds grace);

 private:
  void pump();

  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::optional<int> exit_code_;
  std::atomic<bool> stop_pump_{false};
  LineSink sink_;
  std::thread pump_thread_;
};

// Resolves a command name against a PATH value ("" when not found); names with '/' pass through.
std::string find_in_path(const std::string& name, const std::string& path);

}  // namespace local
