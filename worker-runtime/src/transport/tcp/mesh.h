// The connections of one process set (one socket to every other member, nonblocking) and the
// waiting that every collective shares: poll() on the sockets it needs, watch the others for a
// peer that went away, fail when nothing moved for `timeout_seconds`. The first error shuts
// every socket down, so peers blocked on this rank fail at once instead of waiting out their
// timeout (a dead rank's failure cascades around the set in milliseconds). A rank that fails
// first sends one byte of TCP urgent data ('F', out of band: it never mixes with the data
// stream), so its peers can tell a rank that failed from one that died without a word: the
// error of every survivor names the dead rank.
#pragma once

#include <poll.h>

#include <string>
#include <vector>

#include "transport/tcp/socket.h"

namespace korovod::tcp {

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
  Mesh(int rank, std::vector<Fd> peers, std::vector<int> global_ranks, double timeout_seconds,
       std::string label = "TCP backend", std::vector<std::string> names = {});

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
  // Records the first error, shuts every socket down, and returns the error.
  Status fail(Status why);

 private:
  Status timed_out(const std::vector<short>& want, const char* op);
  static constexpr int kSpinPolls = 100;  // zero-timeout polls (a few tens of µs) before blocking
  static constexpr double kSettleSeconds = 0.2;  // for the notices out and the hang-ups in
  void send_failure_notices();
  // Which peers have hung up, split into those that sent the failure notice and the rest.
  std::string gone_peers();

  int rank_;
  std::vector<Fd> peers_;
  std::vector<int> global_ranks_;
  std::vector<std::string> names_;
  double timeout_seconds_;
  std::string label_;
  std::vector<bool> closed_;  // peers seen hanging up while this rank expected nothing from them
  Status failed_;
  std::vector<pollfd> fds_;  // scratch
};

}  // namespace korovod::tcp
