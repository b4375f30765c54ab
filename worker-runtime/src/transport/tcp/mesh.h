// The connections of one process set (one socket to every other member, nonblocking) and the
// waiting that every collective shares: poll() on the sockets it needs, watch the others for a
// peer that went away, fail when nothing moved for `timeout_seconds`. The first error shuts
// every socket down, so peers blocked on this rank fail at once instead of waiting out their
// timeout (a dead rank's failure cascades around the set in milliseconds). A rank that fails
// first sends one byte of TCP urgent data ('F', out of band: it never mixes with the data
// stream), so its peers can tell a rank that failed from one that died without a word: the
// error of every survivor names the dead rank. A rank that receives a notice fails at once too,
// whichever peer it was waiting for.
//
// A peer that stops without dying (SIGSTOP, a hung process, a network partition) keeps its
// sockets open and sends nothing. The wait on it ends when nothing moved for `timeout_seconds`,
// or earlier when the engine's watchdog interrupts it (interrupt(): the collective timeout
// passed since the collective began). The notice is then 'T' (failed waiting) instead of 'F',
// and every rank that fails afterwards looks for the peers that neither hung up nor sent a
// notice while the others did: those are the lost ones, named first in every survivor's error,
// also in a ring where a survivor waits on another survivor that waits on the stopped rank.
#pragma once

#include <poll.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/mutex.h"
#include "transport/tcp/socket.h"

namespace korovod::tcp {

class Mesh;

// The meshes of one runtime (its control channels and TCP data planes). A rank that fails in one
// sends its failure notice on all of them: a peer may be waiting for it in another (one rank still
// in a data-plane allreduce, the next already in the following cycle's negotiation).
class MeshFamily {
 public:
  void join(Mesh* mesh);
  void leave(Mesh* mesh);
  void notify_all_but(const Mesh* failing, char notice);

 private:
  Mutex mu_;
  std::vector<Mesh*> members_ KOROVOD_GUARDED_BY(mu_);
};

// What a collective wants from one peer in the next wait (poll events) and the I/O it still has
// to do with it (exchange()).
struct PeerIo {
  const std::byte* send = nullptr;
  int64_t send_len = 0, sent = 0;
  std::byte* recv = nullptr;
  int64_t recv_len = 0, received = 0;
};

class Mesh {
 public:
  // peers[r]: the socket to set rank r (invalid for `rank`); global_ranks name them in errors,
  // which start with `label` ("TCP backend", "TCP control plane"); names[r], when given, is what
  // errors call set rank r instead ("rank 4 on host a", TransportProvider::rank_name).
  // `clock` (null = the system's) times the no-progress bound: the runtime's Env.
  Mesh(int rank, std::vector<os::Fd> peers, std::vector<int> global_ranks, double timeout_seconds,
       std::string label = "TCP backend", std::vector<std::string> names = {},
       std::shared_ptr<MeshFamily> family = nullptr, std::shared_ptr<const Clock> clock = nullptr);
  ~Mesh();
  Mesh(const Mesh&) = delete;
  Mesh& operator=(const Mesh&) = delete;

  int rank() const { return rank_; }
  int size() const { return static_cast<int>(peers_.size()); }
  const Status& failed() const { return failed_; }
  std::string peer_name(int r) const;

  // Waits until a peer with want[p] != 0 (POLLIN / POLLOUT) is ready; ready[p] gets its revents.
  Status wait(const std::vector<short>& want, std::vector<short>& ready, const char* op);
  Result<int64_t> send_some(int peer, const std::byte* data, int64_t len);
  Result<int64_t> recv_some(int peer, std::byte* data, int64_t len);
  // Moves every io[p] (send and receive concurrently, all peers at once) to completion.
  Status exchange(std::vector<PeerIo>& io, const char* op);
  // Records the first error, shuts every socket down, and returns the error. `waited_out`: the
  // error is a wait that ended without the peers it waited for (timeout, interrupt).
  Status fail(Status why, bool waited_out = false);
  // Any thread: the wait in progress, and every later one, fails with `why` (the first given)
  // and the peers it waits for. Returns whether a wait was in progress (its error follows within
  // kSettleSeconds, from the thread that waits) or the mesh has failed already (that error is
  // on its way up).
  bool interrupt(const std::string& why);

  static constexpr double kSettleSeconds = 0.2;  // for the notices out and the hang-ups in
  // A sibling in the family failed: one notice to every peer, where the send buffer takes it now.
  void send_notice(char notice);

 private:
  Status timed_out(const std::vector<short>& want, const char* op, const std::string& why);
  std::string names(const std::vector<short>& want) const;
  static constexpr int kSpinPolls = 100;  // zero-timeout polls (a few tens of µs) before blocking
  // Sends every peer the notice ('F' failed, 'T' failed waiting) and shuts the sending side,
  // while collecting for kSettleSeconds which peers hang up or send theirs. Returns what the
  // error adds: the lost peers first, then the others.
  struct Settled {
    std::string lost;  // "lost rank 1 on host h (…); " or ""
    std::string rest;  // "; gone without a failure notice …; failed as well: …"
  };
  Settled settle(char notice);

  int rank_;
  std::vector<os::Fd> peers_;
  std::vector<int> global_ranks_;
  std::vector<std::string> names_;
  double timeout_seconds_;
  std::shared_ptr<const Clock> clock_;  // times timeout_seconds_
  std::string label_;
  std::vector<bool> closed_;  // peers seen hanging up while this rank expected nothing from them
  // A failure notice a wait read already ('F', 'T'; 0 = none): read at once, as the peer may
  // close its socket soon after and a reset would drop the byte before settle() looks.
  std::vector<char> notices_;
  Status failed_;
  std::vector<pollfd> fds_;  // scratch: one per peer, then the interrupt's eventfd
  os::Fd wake_;                  // eventfd: readable once interrupted
  std::atomic<bool> interrupted_{false};
  std::atomic<bool> waiting_{false};
  std::atomic<bool> has_failed_{false};  // failed_ is set (for interrupt(), from another thread)
  Mutex interrupt_mu_;
  std::string interrupt_why_ KOROVOD_GUARDED_BY(interrupt_mu_);
  std::shared_ptr<MeshFamily> family_;
};

}  // namespace korovod::tcp
