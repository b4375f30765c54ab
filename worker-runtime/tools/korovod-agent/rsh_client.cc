#include "rsh_client.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <thread>

#include "frame_io.h"
#include "transport/tcp/socket.h"

namespace korovod::agent {
namespace {

Result<std::string> resolve_ipv4(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (rc != 0 || found == nullptr) return Status::unknown(fmt::format("cannot resolve {}: {}", host, gai_strerror(rc)));
  char ip[INET_ADDRSTRLEN] = "";
  inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr, ip, sizeof ip);
  freeaddrinfo(found);
  return std::string(ip);
}

// Name lookup and connect, both retried until `deadline`.
Result<os::Fd> reach(const RshRequest& request, tcp::Deadline deadline) {
  Status last = Status::unknown("no attempt");
  while (!deadline.passed()) {
    Result<std::string> ip = resolve_ipv4(request.host);
    if (ip.is_ok()) {
      // A bounded try, so that a record that changes (a pod recreated) is looked up again.
      const double slice = std::min(deadline.seconds_left(), 2.0);
      Result<os::Fd> fd = tcp::connect_to({*ip, request.port}, tcp::SocketOptions{}, tcp::deadline_after(slice));
      if (fd.is_ok()) return fd;
      last = fd.status();
    } else {
      last = ip.status();
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  }
  return last;
}

class Relay {
 public:
  Relay(int conn, std::string peer) : conn_(conn), peer_(std::move(peer)) {}

  // Until the exit frame: the command's exit code, or 255 with a message.
  int run() {
    bool stdin_open = true;
    for (;;) {
      pollfd fds[2] = {{conn_, POLLIN, 0}, {0, POLLIN, 0}};
      if (poll(fds, stdin_open ? 2 : 1, -1) < 0) continue;  // EINTR
      if (stdin_open && fds[1].revents != 0) stdin_open = forward_stdin();
      if (fds[0].revents != 0) {
        std::string bytes;
        if (read_some(conn_, bytes) == ReadResult::kEnd) return lost("the connection closed before the command's exit");
        decoder_.feed(bytes);
        if (std::optional<int> code = take_frames()) return *code;
      }
    }
  }

 private:
  // False once stdin has ended (and the agent was told).
  bool forward_stdin() {
    std::string bytes;
    const ReadResult r = read_some(0, bytes);
    if (r == ReadResult::kAgain) return true;
    Status sent = r == ReadResult::kData ? send_frame(conn_, FrameType::kStdin, bytes, peer_)
                                         : send_frame(conn_, FrameType::kStdinEnd, "", peer_);
    (void)sent;  // a broken connection shows on the read side
    return r == ReadResult::kData;
  }

  // The exit code once the exit frame came (or 255 on a protocol error).
  std::optional<int> take_frames() {
    for (;;) {
      Result<std::optional<Frame>> frame = decoder_.next();
      if (!frame.is_ok()) return lost(frame.status().message());
      if (!frame->has_value()) return std::nullopt;
      const Frame& f = **frame;
      if (f.type == FrameType::kStdout) (void)write_all(1, f.data);
      else if (f.type == FrameType::kStderr) (void)write_all(2, f.data);
      else if (f.type == FrameType::kExit) {
        Result<int> code = exit_code_of(f);
        return code.is_ok() ? *code : lost(code.status().message());
      } else {
        return lost(fmt::format("it sent a frame of type '{}'", static_cast<char>(f.type)));
      }
    }
  }

  int lost(const std::string& why) {
    fmt::print(stderr, "korovod-agent rsh: lost the connection to {}: {}\n", peer_, why);
    return kRshFailure;
  }

  const int conn_;
  const std::string peer_;
  FrameDecoder decoder_;
};

}  // namespace

int run_rsh(const RshRequest& request, const tcp::JobSecret& secret, const RshOptions& options) {
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  sigprocmask(SIG_BLOCK, &pipe, nullptr);  // a closed stdout is an error to ignore, not death
  const std::string peer = fmt::format("{}:{}", request.host, request.port);
  if (request.command.size() > kMaxFrameBytes) {
    fmt::print(stderr, "korovod-agent rsh: the command has {} bytes, more than the {} allowed\n",
               request.command.size(), kMaxFrameBytes);
    return kRshFailure;
  }
  Result<os::Fd> conn = reach(request, tcp::deadline_after(options.connect_timeout_seconds));
  if (!conn.is_ok()) {
    fmt::print(stderr, "korovod-agent rsh: could not reach {} within {} s: {}\n", peer,
               options.connect_timeout_seconds, conn.status().message());
    return kRshFailure;
  }
  Status shook = tcp::authenticate_to_server(conn->get(), secret, "agent", "",
                                             tcp::deadline_after(options.handshake_timeout_seconds), peer);
  if (!shook.is_ok()) {
    fmt::print(stderr, "korovod-agent rsh: {} refused this job's secret (a pod of another job?): {}\n", peer,
               shook.message());
    return kRshFailure;
  }
  Status sent = send_frame(conn->get(), FrameType::kCommand, request.command, peer);
  if (!sent.is_ok()) {
    fmt::print(stderr, "korovod-agent rsh: lost the connection to {}: {}\n", peer, sent.message());
    return kRshFailure;
  }
  return Relay(conn->get(), peer).run();
}

}  // namespace korovod::agent
