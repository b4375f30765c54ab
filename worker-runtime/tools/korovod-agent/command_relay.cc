#include "command_relay.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <vector>

#include "frame_io.h"
#include "transport/tcp/socket.h"

namespace korovod::agent {
namespace {

constexpr size_t kMaxPendingStdin = kMaxFrameBytes;  // stop reading the connection above this
constexpr int kPollMs = 100;                          // how often exits and deadlines are checked
// After SIGKILL, how long output pipes still held (by a process that left the group) are waited for.
constexpr auto kAfterKill = std::chrono::seconds(2);

}  // namespace

CommandRelay::CommandRelay(os::Fd conn, std::string peer, os::Child child, FrameDecoder decoder, int grace_seconds,
                           int stop_fd)
    : peer_(std::move(peer)), grace_seconds_(grace_seconds), stop_fd_(stop_fd), conn_(std::move(conn)),
      group_(std::move(child)), decoder_(std::move(decoder)) {
  (void)tcp::set_nonblocking(group_.in().get());  // a command not reading its stdin must not block the loop
}

void CommandRelay::run() {
  on_connection_readable();  // frames that came with the command
  for (;;) {
    reap();
    if (exit_code_ && !outputs_open()) {
      if (conn_.valid()) (void)send_exit(conn_.get(), *exit_code_, peer_);
      return;
    }
    group_.kill_if_due(Clock::now());
    if (give_up_at_ && !conn_.valid() && Clock::now() >= *give_up_at_) return;
    poll_once();
  }
}

void CommandRelay::poll_once() {
  std::vector<pollfd> fds;
  auto watch = [&fds](int fd, short events) {
    fds.push_back({fd, events, 0});
    return &fds.back() - fds.data();
  };
  const auto conn_at = conn_.valid() && pending_stdin_.size() < kMaxPendingStdin ? watch(conn_.get(), POLLIN) : -1;
  const auto out_at = group_.out().valid() ? watch(group_.out().get(), POLLIN) : -1;
  const auto err_at = group_.err().valid() ? watch(group_.err().get(), POLLIN) : -1;
  const auto in_at = group_.in().valid() && !pending_stdin_.empty() ? watch(group_.in().get(), POLLOUT) : -1;
  const auto stop_at = stop_fd_ >= 0 ? watch(stop_fd_, POLLIN) : -1;
  if (poll(fds.data(), fds.size(), kPollMs) <= 0) return;
  auto ready = [&fds](long at) { return at >= 0 && fds[static_cast<size_t>(at)].revents != 0; };
  if (ready(stop_at)) {
    signalfd_siginfo info;
    (void)!read(stop_fd_, &info, sizeof info);
    terminate();
  }
  if (ready(out_at)) on_output(group_.out(), FrameType::kStdout);
  if (ready(err_at)) on_output(group_.err(), FrameType::kStderr);
  if (ready(conn_at)) on_connection_readable();
  if (ready(in_at)) flush_stdin();
  if (stdin_ended_ && pending_stdin_.empty()) group_.in().reset();
}

void CommandRelay::on_connection_readable() {
  if (!conn_.valid()) return;
  std::string bytes;
  const bool ended = read_some(conn_.get(), bytes) == ReadResult::kEnd;
  decoder_.feed(bytes);
  for (;;) {  // the frames that arrived count, also when the connection closed after them
    Result<std::optional<Frame>> frame = decoder_.next();
    if (!frame.is_ok()) return connection_lost(frame.status().message());
    if (!frame->has_value()) break;
    on_frame(std::move(**frame));
    if (!conn_.valid()) return;
  }
  if (ended) connection_lost("the connection closed before the command exited");
}

void CommandRelay::on_frame(Frame frame) {
  switch (frame.type) {
    case FrameType::kStdin:
      if (group_.in().valid() && !stdin_ended_) pending_stdin_ += frame.data;
      return;
    case FrameType::kStdinEnd:
      stdin_ended_ = true;
      return;
    default:
      connection_lost(fmt::format("it sent a frame of type '{}' after the command", static_cast<char>(frame.type)));
  }
}

void CommandRelay::on_output(os::Fd& pipe, FrameType type) {
  std::string data;
  const ReadResult r = read_some(pipe.get(), data);
  if (r == ReadResult::kEnd) pipe.reset();
  if (r != ReadResult::kData || !conn_.valid()) return;
  Status sent = send_frame(conn_.get(), type, data, peer_);
  if (!sent.is_ok()) connection_lost(sent.message());
}

void CommandRelay::flush_stdin() {
  const ssize_t n = write(group_.in().get(), pending_stdin_.data(), pending_stdin_.size());
  if (n > 0) {
    pending_stdin_.erase(0, static_cast<size_t>(n));
  } else if (n < 0 && errno != EAGAIN && errno != EINTR) {  // the command closed its stdin
    group_.in().reset();
    pending_stdin_.clear();
  }
}

void CommandRelay::reap() {
  if (!exit_code_) exit_code_ = group_.poll();  // and what it left in its group is killed
}

void CommandRelay::connection_lost(const std::string& why) {
  conn_.reset();
  group_.in().reset();  // a watcher on the command's stdin sees end of file
  pending_stdin_.clear();
  if (!exit_code_ || outputs_open()) {
    fmt::print(stderr, "korovod-agent: ending the command of {}: {}\n", peer_, why);
    terminate();
  }
}

void CommandRelay::terminate() {
  if (give_up_at_) return;
  const auto now = Clock::now();
  const std::chrono::seconds grace(grace_seconds_);
  group_.end(now, grace);  // nothing when it has exited: what was left in its group is gone already
  give_up_at_ = now + grace + kAfterKill;
}

}  // namespace korovod::agent
