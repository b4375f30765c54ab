#include "transport/tcp/handshake_gate.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace korovod::tcp {
namespace {

// The first this many rejections are logged one by one, then one line per kLogEvery: an intruder
// that reconnects in a loop cannot flood the job's log.
constexpr size_t kLogFirst = 20, kLogEvery = 1000;

}  // namespace

std::string peer_address(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 || addr.sin_family != AF_INET) {
    return "unknown peer";
  }
  char host[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &addr.sin_addr, host, sizeof host);
  return fmt::format("{}:{}", host, ntohs(addr.sin_port));
}

HandshakeGate::HandshakeGate(JobSecret secret, std::string purpose, size_t payload_bytes, std::string owner,
                             double timeout_seconds, AuthLog log, const Clock* clock)
    : secret_(std::move(secret)),
      purpose_(std::move(purpose)),
      payload_bytes_(payload_bytes),
      owner_(std::move(owner)),
      timeout_seconds_(timeout_seconds),
      log_(std::move(log)),
      clock_(clock) {}

void HandshakeGate::close_rejected(os::Fd& fd, const std::string& peer, const std::string& why) {
  ++rejected_;
  // Logged before the close: whoever sees the connection end finds the line already written.
  if (log_ && rejected_ <= kLogFirst) {
    log_(fmt::format("{}: closed the connection from {}: {}", owner_, peer, why));
  } else if (log_ && rejected_ % kLogEvery == 0) {
    log_(fmt::format("{}: {} connections rejected so far; the latest from {}: {}", owner_, rejected_, peer, why));
  }
  fd.reset();
}

void HandshakeGate::admit(os::Fd fd) {
  Status nonblocking = set_nonblocking(fd.get());
  Pending p{std::move(fd), "", ServerHandshake(secret_, purpose_, payload_bytes_), "", Deadline::after(timeout_seconds_, clock_)};
  p.peer = peer_address(p.fd.get());
  if (pending_.size() >= kMaxPendingHandshakes) {
    Pending& oldest = pending_.front();
    close_rejected(oldest.fd, oldest.peer,
                   fmt::format("closed to make room: {} connections were in their handshake", pending_.size()));
    pending_.erase(pending_.begin());
  }
  const std::string& hello = p.handshake.hello();
  // A fresh socket's send buffer always takes these few bytes at once.
  if (!nonblocking.is_ok() ||
      (!hello.empty() && send(p.fd.get(), hello.data(), hello.size(), MSG_NOSIGNAL | MSG_DONTWAIT) !=
                             static_cast<ssize_t>(hello.size()))) {
    close_rejected(p.fd, p.peer, "could not send the handshake's first message");
    return;
  }
  pending_.push_back(std::move(p));
}

size_t HandshakeGate::add_poll_fds(std::vector<pollfd>& fds) const {
  for (const Pending& p : pending_) fds.push_back({p.fd.get(), POLLIN, 0});
  return pending_.size();
}

bool HandshakeGate::step(Pending& p, std::vector<Admitted>& done) {
  const size_t want = p.handshake.proof_bytes();
  while (p.in.size() < want) {
    char buf[256];
    const ssize_t n = recv(p.fd.get(), buf, std::min(sizeof buf, want - p.in.size()), MSG_DONTWAIT);
    if (n == 0) {
      close_rejected(p.fd, p.peer, fmt::format("it closed the connection after {} of the handshake's {} bytes",
                                               p.in.size(), want));
      return true;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      close_rejected(p.fd, p.peer, fmt::format("the connection failed during the handshake: {}", std::strerror(errno)));
      return true;
    }
    p.in.append(buf, static_cast<size_t>(n));
    Status prefix = p.handshake.check_prefix(p.in);
    if (!prefix.is_ok()) {
      close_rejected(p.fd, p.peer, prefix.message());
      return true;
    }
  }
  if (p.in.size() < want) return false;
  Result<std::string> answer = p.handshake.verify(p.in);
  if (answer.is_ok() && !answer->empty() &&
      send(p.fd.get(), answer->data(), answer->size(), MSG_NOSIGNAL | MSG_DONTWAIT) !=
          static_cast<ssize_t>(answer->size())) {
    answer = Status::unknown("could not send the handshake's answer");
  }
  if (!answer.is_ok()) {
    close_rejected(p.fd, p.peer, answer.status().message());
    return true;
  }
  done.push_back({std::move(p.fd), p.peer, p.handshake.payload()});
  return true;
}

void HandshakeGate::progress(const pollfd* fds, size_t count, std::vector<Admitted>& done) {
  std::vector<bool> finished(pending_.size(), false);
  for (size_t i = 0; i < pending_.size(); ++i) {
    Pending& p = pending_[i];
    if (i < count && fds[i].fd == p.fd.get() && fds[i].revents != 0) finished[i] = step(p, done);
    if (!finished[i] && p.deadline.passed()) {
      close_rejected(p.fd, p.peer,
                     fmt::format("no complete job-secret handshake within {} s ({} of {} bytes)", timeout_seconds_,
                                 p.in.size(), p.handshake.proof_bytes()));
      finished[i] = true;
    }
  }
  for (size_t i = pending_.size(); i-- > 0;) {
    if (finished[i]) pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

void HandshakeGate::reject(Admitted& a, const std::string& why) { close_rejected(a.fd, a.peer, why); }

int HandshakeGate::ms_to_next_deadline(int cap_ms) const {
  int ms = cap_ms;
  for (const Pending& p : pending_) ms = std::min(ms, p.deadline.poll_ms(cap_ms));
  return ms;
}

}  // namespace korovod::tcp
