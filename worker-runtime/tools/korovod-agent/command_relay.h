// The running part of a korovod-agent connection (command_session.h): a single-threaded poll
// loop between the connection's frames and the command's pipes, until the command has exited
// and its stdout and stderr reached end of file (then the exit frame), or until the command's
// group is gone after the connection was lost.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "frame.h"
#include "os/fd.h"
#include "os/spawn.h"

namespace korovod::agent {

class CommandRelay {
 public:
  // `decoder` holds what arrived after the command frame; `stop_fd` (a signalfd, or -1) becomes
  // readable when the agent stops.
  CommandRelay(os::Fd conn, std::string peer, os::Child child, FrameDecoder decoder, int grace_seconds, int stop_fd);
  void run();

 private:
  using Clock = std::chrono::steady_clock;
  void poll_once();
  void on_connection_readable();
  void on_frame(Frame frame);
  void on_output(os::Fd& pipe, FrameType type);
  void flush_stdin();
  void reap();
  void connection_lost(const std::string& why);
  void terminate();  // SIGTERM to the command's group now, SIGKILL at kill_at_
  void signal_group(int signal);
  bool outputs_open() const { return child_.out.valid() || child_.err.valid(); }

  // Constant after construction.
  const std::string peer_;
  const int grace_seconds_;
  const int stop_fd_;
  // The loop's state.
  os::Fd conn_;  // invalid once the connection is lost
  os::Child child_;  // its pipes are reset as they end (stdin: at 'i' or when the connection is lost)
  FrameDecoder decoder_;
  std::string pending_stdin_;  // arrived, not yet taken by the command
  bool stdin_ended_ = false;
  std::optional<int> exit_code_;
  std::optional<Clock::time_point> kill_at_;
  bool killed_ = false;
};

}  // namespace korovod::agent
