#include "transport/tcp/tcp_provider.h"

#include <fmt/format.h>

#include <sstream>

#include "transport/tcp/address.h"
#include "transport/tcp/tcp_backend.h"

namespace korovod::tcp {
namespace {

constexpr uint32_t kHandshakeMagic = 0x4b525644;  // "KRVD"

struct Handshake {
  uint32_t magic = kHandshakeMagic;
  int32_t set_id = 0;
  int32_t rank = 0;  // rank in the set of the connecting side
};

std::string one_line(std::string s) {
  for (char& c : s) {
    if (c == '\n') c = ' ';
  }
  return s;
}

// Every member sends "ok <payload>" or "err <why>"; all get everyone's payload in rank order,
// or the same error, so all ranks take the same branch.
Result<std::vector<std::string>> agree(ControlChannel& ctl, const Status& mine, const std::string& payload,
                                       const std::vector<int>& global_ranks) {
  Result<std::vector<std::string>> gathered =
      ctl.gather_to_root(mine.is_ok() ? "ok " + payload : "err " + one_line(mine.message()));
  if (!gathered.is_ok()) return gathered.status();
  std::string joined;
  for (const std::string& s : *gathered) joined += s + "\n";
  KOROVOD_RETURN_IF_ERROR(ctl.broadcast_from_root(joined));
  std::vector<std::string> out;
  std::istringstream in(joined);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("ok ", 0) != 0) {
      return Status::unknown(fmt::format("TCP backend setup failed on rank {}: {}", global_ranks[out.size()],
                                         line.substr(4)));
    }
    out.push_back(line.substr(3));
  }
  if (static_cast<int>(out.size()) != ctl.size()) return Status::unknown("TCP backend setup: bad exchange");
  return out;
}

// Rank `me` connects to every lower rank and accepts every higher one.
Result<std::vector<Fd>> connect_mesh(const Fd& listener, const std::vector<std::string>& endpoints, int me, int set_id,
                                     const TcpOptions& opts, const std::vector<int>& global_ranks) {
  const SocketOptions sock{opts.socket_buffer_bytes};
  const Deadline deadline = deadline_after(opts.timeout_seconds > 0 ? opts.timeout_seconds : 60.0);
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

}  // namespace

Result<std::unique_ptr<Backend>> TcpBackendProvider::create_backend(const std::vector<int>& global_ranks, int set_id) {
  Result<std::unique_ptr<ControlChannel>> control = transport_->create_control(global_ranks, set_id);
  if (!control.is_ok()) return control.status();
  ControlChannel& ctl = **control;

  Result<std::string> address = choose_listen_address(options_.iface);
  Result<Fd> listener = address.is_ok() ? listen_on(*address, 0, SocketOptions{options_.socket_buffer_bytes},
                                                    static_cast<int>(global_ranks.size()) + 8)
                                        : Result<Fd>(address.status());
  const std::string mine = listener.is_ok() ? fmt::format("{}:{}", *address, local_port(*listener)) : "";
  Result<std::vector<std::string>> endpoints = agree(ctl, listener.status(), mine, global_ranks);
  if (!endpoints.is_ok()) return endpoints.status();

  Result<std::vector<Fd>> peers = connect_mesh(*listener, *endpoints, ctl.rank(), set_id, options_, global_ranks);
  Result<std::vector<std::string>> done = agree(ctl, peers.status(), "connected", global_ranks);
  if (!done.is_ok()) return done.status();
  auto mesh = std::make_unique<Mesh>(ctl.rank(), std::move(peers).value(), global_ranks, options_.timeout_seconds);
  return std::unique_ptr<Backend>(std::make_unique<TcpBackend>(std::move(mesh), options_.segment_bytes));
}

}  // namespace korovod::tcp
