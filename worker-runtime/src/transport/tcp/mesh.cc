#include "transport/tcp/mesh.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace korovod::tcp {

Mesh::Mesh(int rank, std::vector<Fd> peers, std::vector<int> global_ranks, double timeout_seconds, std::string label,
           std::vector<std::string> names)
    : rank_(rank),
      peers_(std::move(peers)),
      global_ranks_(std::move(global_ranks)),
      names_(std::move(names)),
      timeout_seconds_(timeout_seconds),
      label_(std::move(label)),
      closed_(peers_.size(), false),
      fds_(peers_.size()) {}

std::string Mesh::peer_name(int r) const {
  if (r < static_cast<int>(names_.size())) return names_[r];
  return fmt::format("rank {}", global_ranks_[r]);
}

void Mesh::send_failure_notices() {
  const Deadline deadline = deadline_after(kSettleSeconds);
  const char notice = 'F';
  for (Fd& fd : peers_) {
    if (!fd.valid()) continue;
    // Urgent data needs room in the send buffer: give a peer that is still reading a moment.
    while (send(fd.get(), &notice, 1, MSG_OOB | MSG_NOSIGNAL | MSG_DONTWAIT) != 1 &&
           (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      pollfd p{fd.get(), POLLOUT, 0};
      if (poll(&p, 1, poll_ms_left(deadline, 100)) <= 0) break;
    }
    shutdown(fd.get(), SHUT_WR);
  }
}

std::string Mesh::gone_peers() {
  // Peers hang up within milliseconds of a failure (the dead one first, the others as they fail
  // in turn): collect for a moment so the message names the rank that started it.
  const Deadline deadline = deadline_after(kSettleSeconds);
  std::vector<bool> gone(peers_.size(), false);
  for (;;) {
    int open = 0;
    for (size_t r = 0; r < peers_.size(); ++r) {
      const bool watch = peers_[r].valid() && !gone[r];
      fds_[r] = {watch ? peers_[r].get() : -1, POLLRDHUP, 0};
      open += watch;
    }
    if (open == 0 || poll(fds_.data(), fds_.size(), poll_ms_left(deadline, 100)) <= 0) break;
    for (size_t r = 0; r < peers_.size(); ++r) {
      if (fds_[r].revents & (POLLRDHUP | POLLHUP | POLLERR)) gone[r] = true;
    }
  }
  std::string died, failed;
  for (size_t r = 0; r < peers_.size(); ++r) {
    if (!gone[r] && !closed_[r]) continue;
    char notice = 0;
    const bool noticed = recv(peers_[r].get(), &notice, 1, MSG_OOB | MSG_DONTWAIT) == 1 && notice == 'F';
    std::string& list = noticed ? failed : died;
    list += (list.empty() ? "" : ", ") + peer_name(static_cast<int>(r));
  }
  std::string out;
  if (!died.empty()) out += "; gone without a failure notice (killed or exited): " + died;
  if (!failed.empty()) out += "; failed as well: " + failed;
  return out;
}

Status Mesh::fail(Status why) {
  if (failed_.is_ok()) {
    send_failure_notices();
    failed_ = Status(why.code(), fmt::format("{} on {}: {}{}", label_, peer_name(rank_), why.message(), gone_peers()));
    for (Fd& fd : peers_) {
      if (fd.valid()) shutdown(fd.get(), SHUT_RDWR);
    }
  }
  return failed_;
}

Status Mesh::timed_out(const std::vector<short>& want, const char* op) {
  std::string waiting;
  for (size_t r = 0; r < want.size(); ++r) {
    if (want[r] != 0) waiting += (waiting.empty() ? "" : ", ") + peer_name(static_cast<int>(r));
  }
  return fail(Status::aborted(fmt::format("{}: no progress for {} s waiting for {}", op, timeout_seconds_, waiting)));
}

Status Mesh::wait(const std::vector<short>& want, std::vector<short>& ready, const char* op) {
  if (!failed_.is_ok()) return failed_;
  const Deadline deadline = deadline_after(timeout_seconds_);
  for (int spins = 0;; ) {
    for (size_t r = 0; r < peers_.size(); ++r) {
      const bool watch = peers_[r].valid() && (want[r] != 0 || !closed_[r]);
      fds_[r] = {watch ? peers_[r].get() : -1, static_cast<short>(want[r] | POLLRDHUP), 0};
    }
    // Spin briefly before sleeping: a peer's answer usually comes within microseconds, and a
    // rank that sleeps on a busy machine waits a whole time slice to run again.
    const int rc = poll(fds_.data(), fds_.size(), spins < kSpinPolls ? 0 : poll_ms_left(deadline, 1000));
    ++spins;
    if (rc < 0 && errno != EINTR) return fail(Status::unknown(fmt::format("poll: {}", std::strerror(errno))));
    bool any = false;
    for (size_t r = 0; r < peers_.size() && rc > 0; ++r) {
      const short ev = fds_[r].revents;
      ready[r] = 0;
      if (ev == 0) continue;
      // A hang-up where nothing is expected is not yet an error: a peer may legitimately exit
      // after its last collective. It is named if this collective then fails.
      if (want[r] == 0) {
        if (ev & (POLLRDHUP | POLLHUP | POLLERR)) closed_[r] = true;
        continue;
      }
      ready[r] = ev;  // readiness, or a hang-up / error that the next send/recv reports
      any = true;
    }
    if (any) return Status::ok();
    if (rc == 0 && std::chrono::steady_clock::now() >= deadline) return timed_out(want, op);
  }
}

Result<int64_t> Mesh::send_some(int peer, const std::byte* data, int64_t len) {
  Result<int64_t> n = tcp::send_some(peers_[peer].get(), data, len, peer_name(peer));
  if (!n.is_ok()) return fail(n.status());
  return n;
}

Result<int64_t> Mesh::recv_some(int peer, std::byte* data, int64_t len) {
  Result<int64_t> n = tcp::recv_some(peers_[peer].get(), data, len, peer_name(peer));
  if (!n.is_ok()) return fail(n.status());
  return n;
}

Status Mesh::exchange(std::vector<PeerIo>& io, const char* op) {
  if (!failed_.is_ok()) return failed_;
  std::vector<short> want(peers_.size(), 0), ready(peers_.size(), 0);
  for (;;) {
    bool pending = false;
    for (size_t p = 0; p < io.size(); ++p) {
      PeerIo& x = io[p];
      want[p] = 0;
      if (static_cast<int>(p) == rank_) continue;
      // Move what the socket takes now; wait only for the rest.
      while (x.sent < x.send_len) {
        Result<int64_t> n = send_some(static_cast<int>(p), x.send + x.sent, x.send_len - x.sent);
        if (!n.is_ok()) return n.status();
        if (*n == 0) break;
        x.sent += *n;
      }
      while (x.received < x.recv_len) {
        Result<int64_t> n = recv_some(static_cast<int>(p), x.recv + x.received, x.recv_len - x.received);
        if (!n.is_ok()) return n.status();
        if (*n == 0) break;
        x.received += *n;
      }
      if (x.sent < x.send_len) want[p] |= POLLOUT;
      if (x.received < x.recv_len) want[p] |= POLLIN;
      pending = pending || want[p] != 0;
    }
    if (!pending) return Status::ok();
    KOROVOD_RETURN_IF_ERROR(wait(want, ready, op));
  }
}

}  // namespace korovod::tcp
