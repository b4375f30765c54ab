// The rendezvous store's server: one thread, poll() over the listener, a wake-up pipe and the
// clients; gets on missing keys are parked on their client and answered when the key appears.
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <charconv>

#include "transport/tcp/store.h"

namespace korovod::tcp {

Result<std::unique_ptr<StoreServer>> StoreServer::start(const std::string& host, int port, JobSecret secret,
                                                        AuthLog log, double handshake_seconds,
                                                        std::shared_ptr<const Clock> clock) {
  Result<os::Fd> listener = listen_on(host, port, SocketOptions{0}, 256);
  if (!listener.is_ok()) return Status::unknown(fmt::format("rendezvous store: {}", listener.status().message()));
  KOROVOD_RETURN_IF_ERROR(set_nonblocking(listener->get()));
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) return Status::unknown("rendezvous store: pipe2 failed");
  const int bound = local_port(*listener);
  HandshakeGate gate(std::move(secret), "store", 0, fmt::format("rendezvous store on port {}", bound),
                     handshake_seconds, std::move(log), clock.get());
  std::unique_ptr<StoreServer> s(new StoreServer(std::move(listener).value(), os::Fd(pipe_fds[0]), os::Fd(pipe_fds[1]),
                                                 std::move(clock), std::move(gate)));
  s->thread_ = std::thread([raw = s.get()] { raw->serve(); });
  return s;
}

StoreServer::StoreServer(os::Fd listener, os::Fd wake_read, os::Fd wake_write, std::shared_ptr<const Clock> clock,
                         HandshakeGate gate)
    : listener_(std::move(listener)),
      wake_read_(std::move(wake_read)),
      wake_write_(std::move(wake_write)),
      clock_(std::move(clock)),
      gate_(std::move(gate)) {
  port_ = local_port(listener_);
}

StoreServer::~StoreServer() {
  const char stop = 's';
  (void)!write(wake_write_.get(), &stop, 1);
  if (thread_.joinable()) thread_.join();
}

StoreResponse StoreServer::apply(const StoreRequest& r) {
  switch (r.op) {
    case StoreOp::kSet:
      data_[r.key] = r.value;
      return {};
    case StoreOp::kAdd: {
      int64_t delta = 0, current = 0;
      const std::string& old = data_[r.key];
      auto [p1, e1] = std::from_chars(r.value.data(), r.value.data() + r.value.size(), delta);
      auto [p2, e2] = std::from_chars(old.data(), old.data() + old.size(), current);
      if (e1 != std::errc() || p1 != r.value.data() + r.value.size() || (!old.empty() && e2 != std::errc())) {
        return {false, fmt::format("add on {:?}: not an integer", r.key)};
      }
      (void)p2;
      data_[r.key] = std::to_string(current + delta);
      return {true, data_[r.key]};
    }
    case StoreOp::kTryGet: {
      auto it = data_.find(r.key);
      return {true, it == data_.end() ? std::string("-") : "+" + it->second};
    }
    case StoreOp::kGet:
      break;
  }
  auto it = data_.find(r.key);
  return {true, it->second};
}

bool StoreServer::handle_input(Client& c) {
  char buf[64 * 1024];
  for (;;) {
    const ssize_t n = recv(c.fd.get(), buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0) return false;
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return false;
      break;
    }
    c.in.append(buf, static_cast<size_t>(n));
  }
  for (;;) {
    Result<std::optional<StoreRequest>> r = take_request(c.in);
    if (!r.is_ok()) {
      c.out += encode_response({false, r.status().message()});
      c.in.clear();  // the stream cannot be resynchronised; the client learns why
      return true;
    }
    if (!r->has_value()) return true;
    const StoreRequest& req = **r;
    if (req.op == StoreOp::kGet && (!c.waiting_for.empty() || data_.count(req.key) == 0)) {
      c.waiting_for.push_back(req.key);  // answers keep request order
    } else {
      c.out += encode_response(apply(req));
    }
  }
}

void StoreServer::answer_parked() {
  for (auto& c : clients_) {
    while (!c->waiting_for.empty() && data_.count(c->waiting_for.front()) != 0) {
      c->out += encode_response({true, data_[c->waiting_for.front()]});
      c->waiting_for.erase(c->waiting_for.begin());
    }
  }
}

void StoreServer::accept_new() {
  for (;;) {
    Result<os::Fd> fd = accept_waiting(listener_, SocketOptions{0});
    if (!fd.is_ok() || !fd->valid()) return;  // out of descriptors: the next round tries again
    gate_.admit(std::move(fd).value());
  }
}

// One thread serves everything: the connections still in their handshake (gate_, each with a
// deadline of its own) and the clients that passed it, so a connection that stalls or lies
// delays no one.
void StoreServer::serve() {
  std::vector<pollfd> fds;
  std::vector<Admitted> admitted;
  for (;;) {
    fds.clear();
    fds.push_back({wake_read_.get(), POLLIN, 0});
    fds.push_back({listener_.get(), POLLIN, 0});
    for (auto& c : clients_) fds.push_back({c->fd.get(), static_cast<short>(POLLIN | (c->out.empty() ? 0 : POLLOUT)), 0});
    const size_t gate_at = fds.size();
    const size_t gate_count = gate_.add_poll_fds(fds);
    if (poll(fds.data(), fds.size(), gate_.ms_to_next_deadline(1000)) < 0 && errno != EINTR) return;
    if (fds[0].revents != 0) return;
    admitted.clear();
    gate_.progress(fds.data() + gate_at, gate_count, admitted);
    if (fds[1].revents & POLLIN) accept_new();
    std::vector<bool> keep(clients_.size(), true);
    for (size_t i = 0; i < clients_.size() && i + 2 < gate_at; ++i) {
      if (fds[i + 2].revents & (POLLIN | POLLHUP | POLLERR)) keep[i] = handle_input(*clients_[i]);
    }
    answer_parked();
    for (size_t i = 0; i < clients_.size(); ++i) {
      Client& c = *clients_[i];
      while (keep[i] && !c.out.empty()) {
        const ssize_t n = send(c.fd.get(), c.out.data(), c.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) c.out.erase(0, static_cast<size_t>(n));
        else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        else if (n < 0 && errno != EINTR) keep[i] = false;
      }
    }
    for (size_t i = clients_.size(); i-- > 0;) {
      if (!keep[i]) clients_.erase(clients_.begin() + static_cast<std::ptrdiff_t>(i));
    }
    for (Admitted& a : admitted) clients_.push_back(std::make_unique<Client>(Client{std::move(a.fd), {}, {}, {}}));
  }
}

}  // namespace korovod::tcp
