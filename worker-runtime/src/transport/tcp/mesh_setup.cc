#include "transport/tcp/mesh_setup.h"

#include <fmt/format.h>

namespace korovod::tcp {
namespace {

constexpr uint32_t kHandshakeMagic = 0x4b525644;  // "KRVD"

struct Handshake {
  uint32_t magic = kHandshakeMagic;
  int32_t set_id = 0;
  int32_t rank = 0;  // rank in the set of the connecting side
};

}  // namespace

Result<std::vector<Fd>> connect_mesh(const Fd& listener, const std::vector<std::string>& endpoints, int me, int set_id,
                                     const SocketOptions& sock, double timeout_seconds,
                                     const std::vector<int>& global_ranks) {
  const Deadline deadline = deadline_after(timeout_seconds > 0 ? timeout_seconds : 60.0);
  const int n = static_cast<int>(endpoints.size());
  std::vector<Fd> peers(static_cast<size_t>(n));
  for (int p = 0; p < me; ++p) {
    Result<Endpoint> at = Endpoint::parse(endpoints[p]);
    if (!at.is_ok()) return at.status();
    Result<Fd> fd = connect_to(*at, sock, deadline);
    if (!fd.is_ok()) return Status::unknown(fmt::format("rank {}: {}", global_ranks[p], fd.status().message()));
    const Handshake hello{kHandshakeMagic, set_id, me};
    KOROVOD_RETURN_IF_ERROR(send_all(fd->get(), &hello, sizeof hello, deadline, fmt::format("rank {}", global_ranks[p])));
    peers[p] = std::move(fd).value();
  }
  for (int accepted = 0; accepted < n - 1 - me; ++accepted) {
    Result<Fd> fd = accept_one(listener, sock, deadline);
    if (!fd.is_ok()) return Status::unknown(fmt::format("accepting the higher ranks: {}", fd.status().message()));
    Handshake hello;
    KOROVOD_RETURN_IF_ERROR(recv_all(fd->get(), &hello, sizeof hello, deadline, "a connecting rank"));
    if (hello.magic != kHandshakeMagic || hello.set_id != set_id || hello.rank <= me || hello.rank >= n ||
        peers[hello.rank].valid()) {
      return Status::unknown(fmt::format("unexpected connection (set {}, rank {}) while building process set {}",
                                         hello.set_id, hello.rank, set_id));
    }
    peers[hello.rank] = std::move(fd).value();
  }
  for (int p = 0; p < n; ++p) {
    if (p != me) KOROVOD_RETURN_IF_ERROR(set_nonblocking(peers[p].get()));
  }
  return peers;
}

}  // namespace korovod::tcp
