#include "command_session.h"

#include <fmt/format.h>

#include <optional>

#include "command_relay.h"
#include "frame_io.h"
#include "korovod/config.h"
#include "os/spawn.h"
#include "transport/tcp/socket.h"

namespace korovod::agent {
namespace {

// The accepting side of auth.h's handshake, blocking until `deadline`.
Status accept_handshake(int fd, const tcp::JobSecret& secret, tcp::Deadline deadline, const std::string& peer) {
  tcp::ServerHandshake handshake(secret, "agent", 0);
  KOROVOD_RETURN_IF_ERROR(tcp::send_all(fd, handshake.hello().data(), handshake.hello().size(), deadline, peer));
  std::string proof(handshake.proof_bytes(), '\0');
  // The magic first: a client without the secret is told apart from a wrong proof.
  const size_t head = std::min(proof.size(), tcp::kMagicBytes);
  KOROVOD_RETURN_IF_ERROR(tcp::recv_all(fd, proof.data(), head, deadline, peer));
  KOROVOD_RETURN_IF_ERROR(handshake.check_prefix(std::string_view(proof).substr(0, head)));
  KOROVOD_RETURN_IF_ERROR(tcp::recv_all(fd, proof.data() + head, proof.size() - head, deadline, peer));
  Result<std::string> answer = handshake.verify(proof);
  if (!answer.is_ok()) return answer.status();
  return tcp::send_all(fd, answer->data(), answer->size(), deadline, peer);
}

// The first frame, which must be the command; what arrived after it stays in `decoder`.
Result<std::string> read_command(int fd, FrameDecoder& decoder, tcp::Deadline deadline, const std::string& peer) {
  for (;;) {
    Result<std::optional<Frame>> frame = decoder.next();
    if (!frame.is_ok()) return frame.status();
    if (frame->has_value()) {
      if ((*frame)->type != FrameType::kCommand) return Status::unknown("its first frame is not the command");
      return std::move((*frame)->data);
    }
    char buf[4096];
    // recv_all of one byte at a time would be slow; take what is there, at least one byte.
    KOROVOD_RETURN_IF_ERROR(tcp::recv_all(fd, buf, 1, deadline, peer));
    std::string got(buf, 1);
    (void)read_some(fd, got);  // the rest that is there; a close shows at the next recv_all
    decoder.feed(got);
  }
}

Result<os::Child> start_command(const std::string& command) {
  const EnvMap env = process_environment();
  Result<os::ExecArrays> exec =
      os::ExecArrays::resolve({"/bin/sh", "-c", command}, os::EnvPairs(env.begin(), env.end()));
  if (!exec.is_ok()) return exec.status();
  os::SpawnOptions spawn;
  spawn.stdin_pipe = true;
  spawn.new_session = true;
  spawn.who = "korovod-agent";
  return os::spawn(*exec, spawn);
}

}  // namespace

int serve_connection(os::Fd conn, const std::string& peer, const tcp::JobSecret& secret,
                     const SessionOptions& options, int stop_fd) {
  const tcp::Deadline deadline = tcp::deadline_after(options.handshake_timeout_seconds);
  Status shook = accept_handshake(conn.get(), secret, deadline, peer);
  if (!shook.is_ok()) {
    fmt::print(stderr, "korovod-agent: refused the connection from {}: {}\n", peer, shook.message());
    return 1;
  }
  FrameDecoder decoder;
  Result<std::string> command = read_command(conn.get(), decoder, deadline, peer);
  if (!command.is_ok()) {
    fmt::print(stderr, "korovod-agent: no command from {}: {}\n", peer, command.status().message());
    return 1;
  }
  Result<os::Child> child = start_command(*command);
  if (!child.is_ok()) {
    fmt::print(stderr, "korovod-agent: cannot run a command for {}: {}\n", peer, child.status().message());
    (void)send_frame(conn.get(), FrameType::kStderr, "korovod-agent: " + child.status().message() + "\n", peer);
    (void)send_exit(conn.get(), 255, peer);
    return 1;
  }
  fmt::print(stderr, "korovod-agent: running a command for {}\n", peer);
  CommandRelay relay(std::move(conn), peer, std::move(*child), std::move(decoder), options.grace_seconds, stop_fd);
  relay.run();
  return 0;
}

}  // namespace korovod::agent
