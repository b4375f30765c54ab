#include "transport/tcp/mesh.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace korovod::tcp {

void MeshFamily::join(Mesh* mesh) {
  MutexLock lock(mu_);
  members_.push_back(mesh);
}

void MeshFamily::leave(Mesh* mesh) {
  MutexLock lock(mu_);
  members_.erase(std::remove(members_.begin(), members_.end(), mesh), members_.end());
}

void MeshFamily::notify_all_but(const Mesh* failing, char notice) {
  MutexLock lock(mu_);
  for (Mesh* m : members_) {
    if (m != failing) m->send_notice(notice);
  }
}

Mesh::Mesh(int rank, std::vector<os::Fd> peers, std::vector<int> global_ranks, double timeout_seconds,
           std::string label, std::vector<std::string> names, std::shared_ptr<MeshFamily> family,
           std::shared_ptr<const Clock> clock)
    : rank_(rank),
      peers_(std::move(peers)),
      global_ranks_(std::move(global_ranks)),
      names_(std::move(names)),
      timeout_seconds_(timeout_seconds),
      clock_(clock ? std::move(clock) : std::make_shared<SystemClock>()),
      label_(std::move(label)),
      closed_(peers_.size(), false),
      notices_(peers_.size(), 0),
      fds_(peers_.size() + 1),
      // Without one (out of descriptors) an interrupt is still seen, at the next wake-up (1 s).
      wake_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)),
      family_(std::move(family)) {
  if (family_) family_->join(this);
}

Mesh::~Mesh() {
  if (family_) family_->leave(this);
}

void Mesh::send_notice(char notice) {
  for (const os::Fd& fd : peers_) {
    if (fd.valid()) (void)send(fd.get(), &notice, 1, MSG_OOB | MSG_NOSIGNAL | MSG_DONTWAIT);
  }
}

std::string Mesh::peer_name(int r) const {
  if (r < static_cast<int>(names_.size())) return names_[r];
  return fmt::format("rank {}", global_ranks_[r]);
}

std::string Mesh::names(const std::vector<short>& want) const {
  std::string out;
  for (size_t r = 0; r < want.size(); ++r) {
    if (want[r] != 0) out += (out.empty() ? "" : ", ") + peer_name(static_cast<int>(r));
  }
  return out;
}

Mesh::Settled Mesh::settle(char notice) {
  // Peers hang up within milliseconds of a failure (a dead one first, the others as they fail in
  // turn): collect for a moment so the message names the rank that started it. A notice goes
  // out first wherever the send buffer takes it now; a peer that stopped reading (a stopped
  // rank, its buffer full) is retried meanwhile without holding up the others' notices.
  // Real time, not the Env's: this is how long packets take to arrive, not a bound a user sets
  // (a test that holds its clock still would otherwise hold a failing mesh here for good).
  const Deadline deadline = deadline_after(kSettleSeconds);
  const size_t n = peers_.size();
  std::vector<bool> to_notify(n, false), answered(n, false);
  for (size_t r = 0; r < n; ++r) {
    to_notify[r] = peers_[r].valid();
    answered[r] = closed_[r];
  }
  fds_[n] = {-1, 0, 0};
  for (;;) {
    for (size_t r = 0; r < n; ++r) {
      if (!to_notify[r]) continue;
      if (send(peers_[r].get(), &notice, 1, MSG_OOB | MSG_NOSIGNAL | MSG_DONTWAIT) != 1 &&
          (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        continue;
      }
      shutdown(peers_[r].get(), SHUT_WR);
      to_notify[r] = false;
    }
    int open = 0;
    for (size_t r = 0; r < n; ++r) {
      const short events = static_cast<short>((answered[r] ? 0 : POLLRDHUP | POLLPRI) | (to_notify[r] ? POLLOUT : 0));
      const bool watch = peers_[r].valid() && events != 0;
      fds_[r] = {watch ? peers_[r].get() : -1, events, 0};
      open += watch;
    }
    if (open == 0 || deadline.passed()) break;
    const int rc = poll(fds_.data(), fds_.size(), deadline.poll_ms(100));
    if (rc < 0 && errno != EINTR) break;
    if (rc <= 0) continue;
    for (size_t r = 0; r < n; ++r) {
      if (fds_[r].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLPRI)) answered[r] = true;
    }
  }
  std::string died, failed, silent;
  bool waited_out = notice == 'T';
  for (size_t r = 0; r < n; ++r) {
    if (!peers_[r].valid()) continue;
    if (to_notify[r]) shutdown(peers_[r].get(), SHUT_WR);  // its notice did not fit: the hang-up still says it
    char theirs = notices_[r];
    if (theirs == 0 && recv(peers_[r].get(), &theirs, 1, MSG_OOB | MSG_DONTWAIT) != 1) theirs = 0;
    const bool noticed = theirs == 'F' || theirs == 'T';
    waited_out = waited_out || (noticed && theirs == 'T');
    std::string& list = noticed ? failed : answered[r] ? died : silent;
    list += (list.empty() ? "" : ", ") + peer_name(static_cast<int>(r));
  }
  Settled out;
  // Silence matters only when some rank's wait ran out: otherwise a quiet peer is just one that
  // is not in a collective of this set right now.
  if (waited_out && !silent.empty()) {
    out.lost = fmt::format("lost {} (no data, no failure notice and no hang-up: alive but stopped, stuck or cut "
                           "off; the wait ran out after KOROVOD_COLLECTIVE_TIMEOUT_SECONDS); ",
                           silent);
  }
  if (!died.empty()) out.rest += "; gone without a failure notice (killed or exited): " + died;
  if (!failed.empty()) out.rest += "; failed as well: " + failed;
  return out;
}

Status Mesh::fail(Status why, bool waited_out) {
  if (failed_.is_ok()) {
    const char notice = waited_out ? 'T' : 'F';
    if (family_) family_->notify_all_but(this, notice);
    const Settled s = settle(notice);
    failed_ = Status(why.code(), fmt::format("{} on {}: {}{}{}", label_, peer_name(rank_), s.lost, why.message(), s.rest));
    has_failed_.store(true);
    for (os::Fd& fd : peers_) {
      if (fd.valid()) shutdown(fd.get(), SHUT_RDWR);
    }
  }
  return failed_;
}

Status Mesh::timed_out(const std::vector<short>& want, const char* op, const std::string& why) {
  return fail(Status::aborted(fmt::format("{}: {} waiting for {}", op, why, names(want))), /*waited_out=*/true);
}

bool Mesh::interrupt(const std::string& why) {
  {
    MutexLock lock(interrupt_mu_);
    if (interrupt_why_.empty()) interrupt_why_ = why;
  }
  interrupted_.store(true);
  if (wake_.valid()) {
    const uint64_t one = 1;
    const ssize_t n = write(wake_.get(), &one, sizeof one);
    (void)n;  // the counter only saturates: it is readable either way
  }
  return waiting_.load() || has_failed_.load();
}

Status Mesh::wait(const std::vector<short>& want, std::vector<short>& ready, const char* op) {
  if (!failed_.is_ok()) return failed_;
  struct Waiting {
    std::atomic<bool>& flag;
    explicit Waiting(std::atomic<bool>& f) : flag(f) { flag.store(true); }
    ~Waiting() { flag.store(false); }
  } waiting(waiting_);
  const Deadline deadline = deadline_after(timeout_seconds_, *clock_);
  const size_t n = peers_.size();
  for (int spins = 0;; ) {
    if (interrupted_.load()) {
      std::string why;
      {
        MutexLock lock(interrupt_mu_);
        why = interrupt_why_;
      }
      return timed_out(want, op, why);
    }
    for (size_t r = 0; r < n; ++r) {
      const bool watch = peers_[r].valid() && (want[r] != 0 || !closed_[r]);
      fds_[r] = {watch ? peers_[r].get() : -1, static_cast<short>(want[r] | POLLRDHUP | POLLPRI), 0};
    }
    fds_[n] = {wake_.get(), POLLIN, 0};
    // Spin briefly before sleeping: a peer's answer usually comes within microseconds, and a
    // rank that sleeps on a busy machine waits a whole time slice to run again.
    const int rc = poll(fds_.data(), fds_.size(), spins < kSpinPolls ? 0 : deadline.poll_ms(1000));
    ++spins;
    if (rc < 0 && errno != EINTR) return fail(Status::unknown(fmt::format("poll: {}", std::strerror(errno))));
    bool any = false;
    for (size_t r = 0; r < n && rc > 0; ++r) {
      const short ev = fds_[r].revents;
      ready[r] = 0;
      if (ev == 0) continue;
      // A failure notice, from any peer: the set is failing (that peer stops), so this rank
      // fails now with the others rather than at its own timeout, and they all hear each other.
      // A peer whose wait ran out ('T') makes this failure one too: silence then names the lost.
      if (ev & POLLPRI) {
        char theirs = 0;
        if (recv(peers_[r].get(), &theirs, 1, MSG_OOB | MSG_DONTWAIT) == 1) notices_[r] = theirs;
        return fail(Status::aborted(fmt::format("{}: {} failed (its failure notice came)", op,
                                                peer_name(static_cast<int>(r)))),
                    /*waited_out=*/theirs == 'T');
      }
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
    if (rc == 0 && deadline.passed()) {
      return timed_out(want, op, fmt::format("no progress for {} s", timeout_seconds_));
    }
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
