#include "transport/tcp/mesh_setup.h"

#include <fmt/format.h>
#include <poll.h>

#include <cstring>

namespace korovod::tcp {
namespace {

constexpr uint32_t kHandshakeMagic = 0x4b525644;  // "KRVD"

struct Hello {
  uint32_t magic = kHandshakeMagic;
  int32_t set_id = 0;
  int32_t rank = 0;  // rank in the set of the connecting side
};

std::string encode(const Hello& h) { return std::string(reinterpret_cast<const char*>(&h), sizeof h); }

Status connect_lower(std::vector<os::Fd>& peers, const std::vector<std::string>& endpoints, int me, int set_id,
                     const SocketOptions& sock, Deadline deadline, const std::vector<int>& global_ranks,
                     const MeshAuth& auth) {
  for (int p = 0; p < me; ++p) {
    Result<Endpoint> at = Endpoint::parse(endpoints[p]);
    if (!at.is_ok()) return at.status();
    const std::string name = fmt::format("rank {}", global_ranks[p]);
    Result<os::Fd> fd = connect_to(*at, sock, deadline);
    if (!fd.is_ok()) return Status::unknown(fmt::format("{}: {}", name, fd.status().message()));
    KOROVOD_RETURN_IF_ERROR(
        authenticate_to_server(fd->get(), auth.secret, "mesh", encode(Hello{kHandshakeMagic, set_id, me}), deadline, name));
    peers[p] = std::move(fd).value();
  }
  return Status::ok();
}

// Why an authenticated connection's hello is not one this rank waits for ("" when it is).
std::string unexpected(const Admitted& a, const std::vector<os::Fd>& peers, int me, int set_id) {
  Hello h;
  std::memcpy(&h, a.payload.data(), sizeof h);
  const int n = static_cast<int>(peers.size());
  if (h.magic != kHandshakeMagic) return "it is not a korovod rank (no mesh hello)";
  if (h.set_id != set_id) return fmt::format("it is a rank of process set {}, this listener is set {}'s", h.set_id, set_id);
  if (h.rank <= me || h.rank >= n) return fmt::format("it claims set rank {}, only ranks {}..{} connect here", h.rank, me + 1, n - 1);
  if (peers[h.rank].valid()) return fmt::format("set rank {} is connected already", h.rank);
  return "";
}

std::string missing_ranks(const std::vector<os::Fd>& peers, int me, const std::vector<int>& global_ranks) {
  std::string out;
  for (size_t r = static_cast<size_t>(me) + 1; r < peers.size(); ++r) {
    if (!peers[r].valid()) out += (out.empty() ? "" : ", ") + fmt::format("rank {}", global_ranks[r]);
  }
  return out;
}

Status accept_higher(std::vector<os::Fd>& peers, const os::Fd& listener, int me, int set_id, const SocketOptions& sock,
                     Deadline deadline, const std::vector<int>& global_ranks, const MeshAuth& auth) {
  int missing = static_cast<int>(peers.size()) - 1 - me;
  if (missing == 0) return Status::ok();
  KOROVOD_RETURN_IF_ERROR(set_nonblocking(listener.get()));
  HandshakeGate gate(auth.secret, "mesh", sizeof(Hello),
                     fmt::format("rank {} (process set {})", global_ranks[me], set_id), auth.handshake_seconds,
                     auth.log, auth.clock.get());
  std::vector<pollfd> fds;
  std::vector<Admitted> admitted;
  while (missing > 0) {
    fds.assign(1, {listener.get(), POLLIN, 0});
    const size_t count = gate.add_poll_fds(fds);
    if (poll(fds.data(), fds.size(), std::min(gate.ms_to_next_deadline(1000), deadline.poll_ms(1000))) < 0 &&
        errno != EINTR) {
      return Status::unknown(fmt::format("poll (accepting the higher ranks): {}", std::strerror(errno)));
    }
    admitted.clear();
    gate.progress(fds.data() + 1, count, admitted);
    for (Admitted& a : admitted) {
      const std::string why = unexpected(a, peers, me, set_id);
      if (!why.empty()) {
        gate.reject(a, why);
        continue;
      }
      Hello h;
      std::memcpy(&h, a.payload.data(), sizeof h);
      peers[h.rank] = std::move(a.fd);
      --missing;
    }
    if (fds[0].revents & POLLIN) {
      for (;;) {
        Result<os::Fd> fd = accept_waiting(listener, sock);
        if (!fd.is_ok()) return Status::unknown(fmt::format("accepting the higher ranks: {}", fd.status().message()));
        if (!fd->valid()) break;
        gate.admit(std::move(fd).value());
      }
    }
    if (missing > 0 && deadline.passed()) {
      const std::string rejected =
          gate.rejected() ? fmt::format(" ({} other connections were refused: see the log)", gate.rejected()) : "";
      return Status::aborted(fmt::format("timed out waiting for {} to connect{}",
                                         missing_ranks(peers, me, global_ranks), rejected));
    }
  }
  return Status::ok();
}

}  // namespace

Result<std::vector<os::Fd>> connect_mesh(const os::Fd& listener, const std::vector<std::string>& endpoints, int me,
                                         int set_id, const SocketOptions& sock, double timeout_seconds,
                                         const std::vector<int>& global_ranks, const MeshAuth& auth) {
  const Deadline deadline = Deadline::after(timeout_seconds > 0 ? timeout_seconds : 60.0, auth.clock.get());
  std::vector<os::Fd> peers(endpoints.size());
  KOROVOD_RETURN_IF_ERROR(connect_lower(peers, endpoints, me, set_id, sock, deadline, global_ranks, auth));
  KOROVOD_RETURN_IF_ERROR(accept_higher(peers, listener, me, set_id, sock, deadline, global_ranks, auth));
  for (size_t p = 0; p < peers.size(); ++p) {
    if (static_cast<int>(p) != me) KOROVOD_RETURN_IF_ERROR(set_nonblocking(peers[p].get()));
  }
  return peers;
}

}  // namespace korovod::tcp
