// The running part of a korovod-agent connection (command_session.h): a single-threaded poll
// loop between the connection's frames and the command's pipes, until the command has exited
// and its stdout and stderr reached end of file (then the exit frame), or until the command's
// group is gone after the connection was lost. The command is held as an os::ProcessGroup
// (os/process_group.h), as korovodrun holds a rank: what it leaves in its group is killed when it
// exits, and ending it is SIGTERM to the group, SIGKILL after the grace.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "frame.h"
#include "os/fd.h"
#include "os/process_group.h"
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
  void terminate();  // SIGTERM to the command's group now, SIGKILL after the grace
  bool outputs_open() const { return group_.out().valid() || group_.err().valid(); }

  // Constant after construction.
  const std::string peer_;
  const int grace_seconds_;
  const int stop_fd_;
  // The loop's state.
  os::Fd conn_;  // invalid once the connection is lost
  os::ProcessGroup group_;  // its pipes are reset as they end (stdin: at 'i' or when the connection is lost)
  FrameDecoder decoder_;
  std::string pending_stdin_;  // arrived, not yet taken by the command
  bool stdin_ended_ = false;
  std::optional<int> exit_code_;
  // Once ended (terminate()): with the connection gone, the relay stops then, even while a
  // process that left the group still holds an output pipe open.
  std::optional<Clock::time_point> give_up_at_;
};

}  // namespace korovod::agent
