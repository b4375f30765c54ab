#include "chaos_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>
#include <string>

namespace chaos {
namespace {

sockaddr_in loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

int connect_upstream(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a = loopback(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;  // the API server is down: the client sees its connection end at once
  }
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

}  // namespace

ChaosProxy::ChaosProxy(int upstream_port) : upstream_port_(upstream_port) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a = loopback(0);
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(listen_fd_, 128) != 0 || ::pipe2(wake_, O_CLOEXEC) != 0) {
    throw std::runtime_error("chaos proxy: cannot listen on 127.0.0.1");
  }
  socklen_t len = sizeof a;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

ChaosProxy::~ChaosProxy() {
  (void)!::write(wake_[1], "x", 1);
  acceptor_.join();
  {
    std::lock_guard lock(mu_);
    for (auto& c : connections_) {
      ::shutdown(c->client, SHUT_RDWR);
      ::shutdown(c->upstream, SHUT_RDWR);
    }
  }
  for (auto& c : connections_) {
    c->to_upstream.join();
    c->to_client.join();
    ::close(c->client);
    ::close(c->upstream);
  }
  ::close(listen_fd_);
  ::close(wake_[0]);
  ::close(wake_[1]);
}

void ChaosProxy::pump(int from, int to, Connection& c) {
  char buf[64 * 1024];
  for (;;) {
    const ssize_t n = ::recv(from, buf, sizeof buf, 0);
    if (n <= 0) break;
    for (ssize_t sent = 0; sent < n;) {
      const ssize_t m = ::send(to, buf + sent, static_cast<size_t>(n - sent), MSG_NOSIGNAL);
      if (m <= 0) {
        sent = n;
        ::shutdown(from, SHUT_RDWR);  // the other side is gone: end this direction too
        break;
      }
      sent += m;
    }
  }
  // End of stream or an error: both ends see the connection close, as a cut does.
  ::shutdown(to, SHUT_RDWR);
  ::shutdown(from, SHUT_RDWR);
  ++c.pumps_done;
}

void ChaosProxy::accept_loop() {
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    if (::poll(fds, 2, 500) < 0) continue;
    if (fds[1].revents) return;
    reap_finished();
    if (!(fds[0].revents & POLLIN)) continue;
    const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    if (refusing_) {
      ::close(client);
      continue;
    }
    const int upstream = connect_upstream(upstream_port_);
    if (upstream < 0) {
      ::close(client);
      continue;
    }
    ++accepted_;
    auto c = std::make_unique<Connection>();
    c->client = client;
    c->upstream = upstream;
    Connection& ref = *c;
    std::lock_guard lock(mu_);
    c->to_upstream = std::thread([&ref] { pump(ref.client, ref.upstream, ref); });
    c->to_client = std::thread([&ref] { pump(ref.upstream, ref.client, ref); });
    connections_.push_back(std::move(c));
  }
}

void ChaosProxy::reap_finished() {
  std::list<std::unique_ptr<Connection>> done;
  {
    std::lock_guard lock(mu_);
    for (auto it = connections_.begin(); it != connections_.end();) {
      if ((*it)->pumps_done == 2) {
        done.push_back(std::move(*it));
        it = connections_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& c : done) {
    c->to_upstream.join();
    c->to_client.join();
    ::close(c->client);
    ::close(c->upstream);
  }
}

int ChaosProxy::cut(std::mt19937& rng, double fraction) {
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  int n = 0;
  std::lock_guard lock(mu_);
  for (auto& c : connections_) {
    if (c->pumps_done > 0 || coin(rng) >= fraction) continue;
    ::shutdown(c->client, SHUT_RDWR);
    ::shutdown(c->upstream, SHUT_RDWR);
    ++n;
  }
  cut_total_ += n;
  return n;
}

}  // namespace chaos
