// One started program and the process group it leads (spawn's), held the one way korovodrun
// holds a rank (tools/korovodrun: supervisor.cc, worker_pool.cc) and local mode a pod's process
// (operator/local/process/process.h) and korovod-agent a command (command_relay.h): reaped without blocking (whatever it left in its group is
// SIGKILLed then, before its pid -- the group's id -- can be reused), signalled as a group, and
// ended with a grace period: asked first (SIGTERM to the group, or closing its stdin, which is
// how an ssh-run command is told to end: korovodrun's remote_command.h), SIGKILL to the group
// once the grace has passed. Ending never blocks: the caller's loop (a poll over the output
// pipes, on its own clock) calls kill_if_due(now) and sleeps at most until kill_deadline().
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>

#include "os/spawn.h"

namespace korovod::os {

class ProcessGroup {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  enum class Ask { kSigterm, kCloseStdin };

  explicit ProcessGroup(Child child) : child_(std::move(child)) {}
  ProcessGroup(ProcessGroup&& other) noexcept;
  ProcessGroup& operator=(ProcessGroup&& other) noexcept;
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;
  // One still running is SIGKILLed with its group and reaped: nothing is left behind.
  ~ProcessGroup();

  pid_t pid() const { return child_.pid; }  // also the group's id
  Fd& out() { return child_.out; }
  Fd& err() { return child_.err; }
  Fd& in() { return child_.in; }
  const Fd& out() const { return child_.out; }
  const Fd& err() const { return child_.err; }
  bool running() const { return child_.pid > 0 && !exit_code_; }
  std::optional<int> exit_code() const { return exit_code_; }

  // The exit code (128 + signal when killed) once it has ended, reaping it and killing what it
  // left in its group; nullopt at once while it runs. Its stdin is closed when it is reaped.
  std::optional<int> poll();
  // Blocks until it ends; then as poll().
  int wait();
  // `signo` to the whole group while the program runs (not after: the id may be reused); to the
  // program alone while it has no group yet (spawned with new_session, before its setsid()).
  void signal(int signo);

  // Starts ending it: asks as `ask` says, and SIGKILL is due at now + grace. Nothing when it
  // has ended or is already being ended.
  void end(TimePoint now, std::chrono::milliseconds grace, Ask ask = Ask::kSigterm);
  // SIGKILL is due at once (a second stop signal to korovodrun); kill_if_due sends it.
  void kill_soon(TimePoint now);
  // Sends the SIGKILL that is due by `now`; true if it sent it.
  bool kill_if_due(TimePoint now);
  bool ending() const { return ending_; }
  // When a SIGKILL is due; nullopt when none is (not ending, ended, or already sent).
  std::optional<TimePoint> kill_deadline() const;

 private:
  void reaped(int code);

  Child child_;
  std::optional<int> exit_code_;
  bool ending_ = false;
  std::optional<TimePoint> kill_at_;
};

}  // namespace korovod::os
