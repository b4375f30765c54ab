// The POSIX socket seam of the TCP transport: listen / connect with a deadline (sockets are
// os::Fd, os/fd.h), whole-buffer blocking I/O with a deadline (setup and the rendezvous store), and
// nonblocking partial I/O (the data plane). Every failure is a Status naming the peer.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "korovod/clock.h"
#include "korovod/status.h"
#include "os/fd.h"

namespace korovod::tcp {

// When a wait on a socket gives up, on a Clock: the runtime's Env where a start path has one
// (connection setup, the handshake, the rendezvous store, a collective's bound -- a test moves
// that clock by hand), the system's otherwise. A poll() still sleeps in real time, in slices,
// and its caller asks the deadline again after each. The clock must outlive the deadline.
class Deadline {
 public:
  // Never passes.
  Deadline() = default;
  // `seconds` from now on `clock` (null: the system's); seconds <= 0 means never.
  static Deadline after(double seconds, const Clock* clock = nullptr);
  bool never() const { return at_ == Clock::TimePoint::max(); }
  bool passed() const { return !never() && now() >= at_; }
  // Seconds left (negative once passed; a huge number when never).
  double seconds_left() const;
  // Milliseconds left for poll(), at least 0, at most `cap_ms`.
  int poll_ms(int cap_ms) const;

 private:
  Deadline(Clock::TimePoint at, const Clock* clock) : at_(at), clock_(clock) {}
  Clock::TimePoint now() const { return clock_ ? clock_->now() : std::chrono::steady_clock::now(); }

  Clock::TimePoint at_ = Clock::TimePoint::max();
  const Clock* clock_ = nullptr;
};

// Deadline::after on the system's clock / on `clock`.
Deadline deadline_after(double seconds);
Deadline deadline_after(double seconds, const Clock& clock);

struct Endpoint {
  std::string host;  // numeric IPv4 address
  int port = 0;
  std::string to_string() const;
  static Result<Endpoint> parse(const std::string& host_port);  // "a.b.c.d:port"
};

struct SocketOptions {
  int buffer_bytes = 4 << 20;  // SO_SNDBUF / SO_RCVBUF, set before connect/listen
};

// A listening socket on `host` (numeric IPv4, "0.0.0.0" for any) and `port` (0: ephemeral).
Result<os::Fd> listen_on(const std::string& host, int port, const SocketOptions& opts, int backlog = 64);
int local_port(const os::Fd& fd);
// Connects, retrying refused connections until `deadline` (the peer may not listen yet).
Result<os::Fd> connect_to(const Endpoint& to, const SocketOptions& opts, Deadline deadline);
// Accepts one connection or fails at `deadline`.
Result<os::Fd> accept_one(const os::Fd& listener, const SocketOptions& opts, Deadline deadline);
// Accepts a connection that is already waiting, on a nonblocking listener: an invalid os::Fd when
// none is (or it was reset before it could be taken); an error only when accepting itself fails
// (out of file descriptors).
Result<os::Fd> accept_waiting(const os::Fd& listener, const SocketOptions& opts);

// Blocking-style whole-buffer I/O on a socket (works on blocking and nonblocking fds), failing at
// `deadline`; `peer` names the other side in errors.
Status send_all(int fd, const void* data, size_t len, Deadline deadline, const std::string& peer);
Status recv_all(int fd, void* data, size_t len, Deadline deadline, const std::string& peer);

Status set_nonblocking(int fd);
// Nonblocking partial I/O: bytes moved, 0 when the socket would block; the peer closing or
// resetting the connection is an error naming `peer`.
Result<int64_t> send_some(int fd, const std::byte* data, int64_t len, const std::string& peer);
Result<int64_t> recv_some(int fd, std::byte* data, int64_t len, const std::string& peer);

}  // namespace korovod::tcp
