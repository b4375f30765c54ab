// The accepting side of a listener whose connections must pass the job-secret handshake
// (auth.h): the rendezvous store's single-threaded poll loop and the mesh's accept loop both
// hold their new connections here until each has proven the secret. Every pending connection
// is a state machine of its own with its own deadline, so an intruder that sends nothing, sends
// garbage, or sends a wrong or replayed proof holds up nobody: it is closed (and logged with its
// address) while the real peers go on connecting.
#pragma once

#include <poll.h>

#include <functional>
#include <string>
#include <vector>

#include "transport/tcp/auth.h"

namespace korovod::tcp {

// How long an accepted connection has to complete its handshake before it is closed.
inline constexpr double kHandshakeTimeoutSeconds = 10.0;
// Connections in their handshake at once, per listener. Past it the oldest pending one is closed
// to make room: a flood of silent connections cannot use up the process's file descriptors
// (accept() failing with EMFILE would leave the listener readable and its poll loop spinning),
// and a real rank, whose handshake takes a round trip, still gets through.
inline constexpr size_t kMaxPendingHandshakes = 256;

// Where a rejected connection is reported (a line without level or prefix).
using AuthLog = std::function<void(const std::string&)>;

// The address of the other end of a connected socket, "a.b.c.d:port" ("unknown peer" if none).
std::string peer_address(int fd);

struct Admitted {
  os::Fd fd;             // nonblocking, the handshake done
  std::string peer;  // its address
  std::string payload;
};

class HandshakeGate {
 public:
  // `owner` says whose listener this is in the log ("rendezvous store", "rank 2, process set 0");
  // a connection that has not finished its handshake `timeout_seconds` after it was accepted is
  // closed, on `clock` (null: the system's; else it must outlive the gate).
  HandshakeGate(JobSecret secret, std::string purpose, size_t payload_bytes, std::string owner, double timeout_seconds,
                AuthLog log, const Clock* clock = nullptr);

  // A freshly accepted connection (made nonblocking here): the hello goes out at once. Call it
  // after progress() in a round (it may close the oldest pending connection).
  void admit(os::Fd fd);
  // Appends one pollfd per pending connection; returns how many.
  size_t add_poll_fds(std::vector<pollfd>& fds) const;
  // Moves the pending connections on with the revents poll() found for the `count` entries
  // add_poll_fds() appended at `fds`; closes those that failed or ran past their deadline; those
  // done go to `done`. Admissions after add_poll_fds() wait for the next round.
  void progress(const pollfd* fds, size_t count, std::vector<Admitted>& done);
  // Closes and logs a connection that passed the handshake but said something it must not (a
  // rank out of range, a duplicate).
  void reject(Admitted& a, const std::string& why);
  // Milliseconds until the nearest pending deadline, at most `cap_ms` (cap_ms with none).
  int ms_to_next_deadline(int cap_ms) const;
  size_t pending() const { return pending_.size(); }
  size_t rejected() const { return rejected_; }

 private:
  struct Pending {
    os::Fd fd;
    std::string peer;
    ServerHandshake handshake;
    std::string in;
    Deadline deadline;
  };
  // Reads what there is (never past the proof); true when the handshake is decided.
  bool step(Pending& p, std::vector<Admitted>& done);
  void close_rejected(os::Fd& fd, const std::string& peer, const std::string& why);

  JobSecret secret_;
  std::string purpose_;
  size_t payload_bytes_;
  std::string owner_;
  double timeout_seconds_;
  AuthLog log_;
  const Clock* clock_;
  std::vector<Pending> pending_;
  size_t rejected_ = 0;
};

}  // namespace korovod::tcp
