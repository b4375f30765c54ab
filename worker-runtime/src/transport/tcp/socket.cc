#include "transport/tcp/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <thread>

namespace korovod::tcp {
namespace {

std::string errno_text(int err) { return std::strerror(err); }

void tune(int fd, const SocketOptions& opts) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (opts.buffer_bytes > 0) {
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &opts.buffer_bytes, sizeof opts.buffer_bytes);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &opts.buffer_bytes, sizeof opts.buffer_bytes);
  }
}

Result<sockaddr_in> to_sockaddr(const std::string& host, int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return Status::invalid_argument(fmt::format("not a numeric IPv4 address: {:?}", host));
  }
  return addr;
}

// Waits until `fd` is ready for `events` or the deadline passes.
Status wait_ready(int fd, short events, Deadline deadline, const std::string& what) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int rc = poll(&p, 1, deadline.poll_ms(1000));
    if (rc > 0) return Status::ok();
    if (rc < 0 && errno != EINTR) return Status::unknown(fmt::format("poll ({}): {}", what, errno_text(errno)));
    if (rc == 0 && deadline.passed()) {
      return Status::aborted(fmt::format("timed out {}", what));
    }
  }
}

}  // namespace

Deadline Deadline::after(double seconds, const Clock* clock) {
  if (!(seconds > 0)) return Deadline();
  const Clock::TimePoint now = clock ? clock->now() : std::chrono::steady_clock::now();
  const std::chrono::duration<double> left(seconds);
  if (left >= Clock::TimePoint::max() - now) return Deadline();  // beyond the clock: never
  return Deadline(now + std::chrono::duration_cast<Clock::TimePoint::duration>(left), clock);
}

double Deadline::seconds_left() const {
  if (never()) return std::numeric_limits<double>::max();
  return std::chrono::duration<double>(at_ - now()).count();
}

int Deadline::poll_ms(int cap_ms) const {
  if (never()) return cap_ms;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at_ - now()).count();
  return static_cast<int>(std::clamp<int64_t>(left + 1, 0, cap_ms));
}

Deadline deadline_after(double seconds) { return Deadline::after(seconds); }
Deadline deadline_after(double seconds, const Clock& clock) { return Deadline::after(seconds, &clock); }

std::string Endpoint::to_string() const { return fmt::format("{}:{}", host, port); }

Result<Endpoint> Endpoint::parse(const std::string& host_port) {
  const size_t colon = host_port.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return Status::invalid_argument(fmt::format("expected host:port, got {:?}", host_port));
  }
  Endpoint e{host_port.substr(0, colon), 0};
  const std::string port = host_port.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(port) > 65535) {
    return Status::invalid_argument(fmt::format("bad port in {:?}", host_port));
  }
  e.port = std::stoi(port);
  return e;
}

Result<os::Fd> listen_on(const std::string& host, int port, const SocketOptions& opts, int backlog) {
  Result<sockaddr_in> addr = to_sockaddr(host, port);
  if (!addr.is_ok()) return addr.status();
  os::Fd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Status::unknown(fmt::format("socket: {}", errno_text(errno)));
  int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  tune(fd.get(), opts);  // accepted sockets inherit the buffer sizes (and the window scale)
  if (bind(fd.get(), reinterpret_cast<const sockaddr*>(&*addr), sizeof *addr) != 0) {
    return Status::unknown(fmt::format("bind {}:{}: {}", host, port, errno_text(errno)));
  }
  if (listen(fd.get(), backlog) != 0) return Status::unknown(fmt::format("listen: {}", errno_text(errno)));
  return fd;
}

int local_port(const os::Fd& fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  if (getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) return 0;
  return ntohs(addr.sin_port);
}

Result<os::Fd> connect_to(const Endpoint& to, const SocketOptions& opts, Deadline deadline) {
  Result<sockaddr_in> addr = to_sockaddr(to.host, to.port);
  if (!addr.is_ok()) return addr.status();
  for (auto pause = std::chrono::milliseconds(5);; pause = std::min(pause * 2, std::chrono::milliseconds(200))) {
    os::Fd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd.valid()) return Status::unknown(fmt::format("socket: {}", errno_text(errno)));
    tune(fd.get(), opts);
    if (connect(fd.get(), reinterpret_cast<const sockaddr*>(&*addr), sizeof *addr) == 0) return fd;
    const int err = errno;
    if ((err != ECONNREFUSED && err != EINTR && err != ETIMEDOUT) || deadline.passed()) {
      return Status::unknown(fmt::format("connect to {}: {}", to.to_string(), errno_text(err)));
    }
    std::this_thread::sleep_for(pause);
  }
}

Result<os::Fd> accept_one(const os::Fd& listener, const SocketOptions& opts, Deadline deadline) {
  KOROVOD_RETURN_IF_ERROR(wait_ready(listener.get(), POLLIN, deadline, "waiting for a connection"));
  os::Fd fd(accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!fd.valid()) return Status::unknown(fmt::format("accept: {}", errno_text(errno)));
  tune(fd.get(), opts);
  return fd;
}

Result<os::Fd> accept_waiting(const os::Fd& listener, const SocketOptions& opts) {
  for (;;) {
    os::Fd fd(accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (fd.valid()) {
      tune(fd.get(), opts);
      return fd;
    }
    const int err = errno;
    if (err == EINTR) continue;
    // Gone before it was taken, or nothing there: no connection, and no reason to stop listening.
    if (err == EAGAIN || err == EWOULDBLOCK || err == ECONNABORTED || err == EPROTO || err == EPERM) return os::Fd();
    return Status::unknown(fmt::format("accept: {}", errno_text(err)));
  }
}

Status send_all(int fd, const void* data, size_t len, Deadline deadline, const std::string& peer) {
  const auto* p = static_cast<const std::byte*>(data);
  for (size_t done = 0; done < len;) {
    Result<int64_t> n = send_some(fd, p + done, static_cast<int64_t>(len - done), peer);
    if (!n.is_ok()) return n.status();
    done += static_cast<size_t>(*n);
    if (*n == 0) KOROVOD_RETURN_IF_ERROR(wait_ready(fd, POLLOUT, deadline, "sending to " + peer));
  }
  return Status::ok();
}

Status recv_all(int fd, void* data, size_t len, Deadline deadline, const std::string& peer) {
  auto* p = static_cast<std::byte*>(data);
  for (size_t done = 0; done < len;) {
    KOROVOD_RETURN_IF_ERROR(wait_ready(fd, POLLIN, deadline, "waiting for " + peer));
    Result<int64_t> n = recv_some(fd, p + done, static_cast<int64_t>(len - done), peer);
    if (!n.is_ok()) return n.status();
    done += static_cast<size_t>(*n);
  }
  return Status::ok();
}

Status set_nonblocking(int fd) {
  const int flags = fcntl(fd, F_GETFL, 0);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    return Status::unknown(fmt::format("fcntl O_NONBLOCK: {}", errno_text(errno)));
  }
  return Status::ok();
}

Result<int64_t> send_some(int fd, const std::byte* data, int64_t len, const std::string& peer) {
  for (;;) {
    const ssize_t n = send(fd, data, static_cast<size_t>(len), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) return static_cast<int64_t>(n);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return int64_t{0};
    return Status::unknown(fmt::format("connection to {} lost while sending: {}", peer, errno_text(errno)));
  }
}

Result<int64_t> recv_some(int fd, std::byte* data, int64_t len, const std::string& peer) {
  for (;;) {
    const ssize_t n = recv(fd, data, static_cast<size_t>(len), MSG_DONTWAIT);
    if (n > 0) return static_cast<int64_t>(n);
    if (n == 0 && len > 0) return Status::unknown(fmt::format("{} closed the connection (it failed or exited)", peer));
    if (n == 0) return int64_t{0};
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return int64_t{0};
    return Status::unknown(fmt::format("connection to {} lost while receiving: {}", peer, errno_text(errno)));
  }
}

}  // namespace korovod::tcp
