#include "transport/tcp/tcp_transport.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "transport/tcp/address.h"
#include "transport/tcp/elastic.h"
#include "transport/tcp/mesh_setup.h"
#include "transport/tcp/tcp_control.h"

namespace korovod::tcp {

namespace {

// Seconds until `deadline`, never 0 or less: a store timeout of 0 would mean "wait forever".
double seconds_left(const Deadline& deadline) { return std::max(deadline.seconds_left(), 0.001); }

}  // namespace

Result<std::shared_ptr<TcpTransportProvider>> TcpTransportProvider::create(const TcpWorldConfig& world,
                                                                           const std::string& iface,
                                                                           const HostIdentity& host, AuthLog log,
                                                                           std::shared_ptr<const Clock> clock) {
  std::shared_ptr<TcpTransportProvider> t(new TcpTransportProvider());
  t->iface_ = iface;
  if (!world.job_secret.empty()) {
    Result<JobSecret> secret = JobSecret::from_text(world.job_secret, "the launcher");
    if (!secret.is_ok()) return secret.status();
    t->auth_.secret = std::move(secret).value();
  } else if (world.rank == 0 && log) {
    log("no job secret (KOROVOD_JOB_SECRET_FILE is not set): the rendezvous store and the TCP connections of this "
        "job accept any process that reaches their ports. korovodrun and the operator set it; see "
        "docs/runtime-config.md");
  }
  t->auth_.log = std::move(log);
  t->auth_.clock = std::move(clock);
  t->timeout_seconds_ = world.start_timeout_seconds;
  t->info_.rank = world.rank;
  t->info_.size = world.size;
  const Deadline deadline = Deadline::after(world.start_timeout_seconds, t->auth_.clock.get());
  const std::string who = fmt::format("rank {}", world.rank);
  if (world.rank == 0 && world.server == RendezvousServer::kRank0) {
    Result<std::unique_ptr<StoreServer>> server =
        StoreServer::start(world.server_listen_host, world.rendezvous_port, t->auth_.secret, t->auth_.log,
                           kHandshakeTimeoutSeconds, t->auth_.clock);
    if (!server.is_ok()) return server.status();
    t->server_ = std::move(server).value();
  }
  const int port = t->server_ ? t->server_->port() : world.rendezvous_port;
  if (port <= 0) return Status::invalid_argument(fmt::format("{}: no rendezvous port to connect to", who));
  Result<std::string> addr = resolve_ipv4(world.rendezvous_addr);
  if (!addr.is_ok()) return Status::invalid_argument(fmt::format("{}: rendezvous address: {}", who, addr.status().message()));
  t->host_id_ = world.host_id.empty() ? host.id() : world.host_id;
  t->hostname_ = world.hostname.empty() ? host.hostname : world.hostname;
  if (world.elastic) {
    KOROVOD_RETURN_IF_ERROR(t->elastic_rendezvous({*addr, port}, world, t->host_id_));
  } else {
    KOROVOD_RETURN_IF_ERROR(t->rendezvous({*addr, port}, t->host_id_, deadline));
  }
  return t;
}

Status TcpTransportProvider::elastic_rendezvous(const Endpoint& store, const TcpWorldConfig& world,
                                                const std::string& host_id) {
  const std::string who = fmt::format("elastic worker {}", world.elastic_worker_id);
  Result<std::unique_ptr<StoreClient>> client =
      StoreClient::connect(store, timeout_seconds_, who, auth_.secret, auth_.clock);
  if (!client.is_ok()) return client.status();
  store_ = std::move(client).value();
  store_endpoint_ = store;
  Result<ElasticRound> round = join_elastic_round(*store_, world.elastic_worker_id, world.elastic_timeout_seconds);
  if (!round.is_ok()) return round.status();
  const WorldInfo assigned = round->world;
  info_ = assigned;
  key_prefix_ = fmt::format("r{}/", round->round);
  joined_round_ = round->round;
  KOROVOD_RETURN_IF_ERROR(learn_topology(host_id, hostname_, Deadline::after(timeout_seconds_, auth_.clock.get())));
  // The driver's view of hosts (discovery's names) decides local and cross ranks, as Horovod's
  // elastic driver does; the host identities still decide where shared memory is possible.
  const bool homogeneous = info_.homogeneous;
  info_ = assigned;
  info_.homogeneous = homogeneous && info_.size % info_.local_size == 0;
  return Status::ok();
}

Status TcpTransportProvider::mark_elastic_ready(const std::string& worker_id) {
  if (info_.elastic_round == 0) return Status::ok();
  return tcp::mark_elastic_ready(*store_, info_.elastic_round, worker_id);
}

std::string TcpTransportProvider::rank_name(int global_rank) const {
  if (global_rank < 0 || global_rank >= static_cast<int>(hostnames_.size())) return fmt::format("rank {}", global_rank);
  return fmt::format("rank {} on host {}", global_rank, hostnames_[global_rank]);
}

Status TcpTransportProvider::rendezvous(const Endpoint& store, const std::string& host_id, Deadline deadline) {
  const std::string who = fmt::format("rank {}", info_.rank);
  for (;;) {
    Result<std::unique_ptr<StoreClient>> client =
        StoreClient::connect(store, seconds_left(deadline), who, auth_.secret, auth_.clock);
    if (!client.is_ok()) return client.status();
    store_ = std::move(client).value();
    store_endpoint_ = store;
    Result<int64_t> starts = store_->add(fmt::format("korovod/starts/{}", info_.rank), 1);
    Status st = starts.is_ok() ? Status::ok() : starts.status();
    if (st.is_ok()) {
      key_prefix_ = fmt::format("start{}/", *starts);
      st = learn_topology(host_id, hostname_, deadline);
    }
    // kUnknownError: the connection broke (a timeout is kAborted); start over while time is left.
    if (st.code() != StatusCode::kUnknownError || deadline.passed()) return st;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// After rank `first` timed out: it and every later rank that has not set its host identity
// either ("rank 1 did not arrive", "ranks 1, 3 did not arrive"), so that a launcher's user sees
// at once which of its processes never started. A connection of its own: the one that timed out
// still has its get parked at the store.
std::string TcpTransportProvider::missing_ranks(int first) {
  std::vector<int> missing{first};
  Result<std::unique_ptr<StoreClient>> look = StoreClient::connect(
      store_endpoint_, 2.0, fmt::format("rank {} (listing the missing ranks)", info_.rank), auth_.secret, auth_.clock);
  for (int r = first + 1; r < info_.size; ++r) {
    if (!look.is_ok()) break;
    Result<std::optional<std::string>> h = (*look)->try_get(fmt::format("{}host/{}", key_prefix_, r));
    if (h.is_ok() && !h->has_value()) missing.push_back(r);
  }
  if (missing.size() == 1) return fmt::format("rank {} did not arrive", first);
  return fmt::format("ranks {} did not arrive", fmt::join(missing, ", "));
}

Result<std::string> TcpTransportProvider::wait_for_peer_key(const std::string& key, Deadline deadline) {
  if (joined_round_ == 0) return store_->get(key, seconds_left(deadline));
  // Polled (a timed-out get would stay parked at the store, on this connection): rounds change
  // seconds apart, so 20 looks a second cost the store nothing.
  for (;;) {
    Result<std::optional<std::string>> value = store_->try_get(key);
    if (!value.is_ok()) return value.status();
    if (value->has_value()) return **value;
    Result<int64_t> published = read_counter(*store_, "elastic/round");
    if (!published.is_ok()) return published.status();
    if (*published > joined_round_) {
      superseded_ = true;
      return Status::aborted(fmt::format(
          "the driver published round {} while this worker waited at the rendezvous of round {} for {:?} (a peer "
          "that did not start): joining the newer round",
          *published, joined_round_, key));
    }
    if (deadline.passed()) return store_->get(key, 0.001);  // the store client's own timeout error
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// Ranks with the same host identity form a host: local rank = position among them; hosts are
// ordered by their lowest rank, and cross rank = this host's position among the hosts that have
// a rank with this local rank.
Status TcpTransportProvider::learn_topology(const std::string& host_id, const std::string& hostname,
                                            Deadline deadline) {
  // The readable name first: a rank that has set its host identity has set its name too.
  KOROVOD_RETURN_IF_ERROR(store_->set(fmt::format("{}name/{}", key_prefix_, info_.rank), hostname));
  KOROVOD_RETURN_IF_ERROR(store_->set(fmt::format("{}host/{}", key_prefix_, info_.rank), host_id));
  std::vector<std::string> hosts(static_cast<size_t>(info_.size));
  hostnames_.assign(hosts.size(), "");
  for (int r = 0; r < info_.size; ++r) {
    Result<std::string> h = wait_for_peer_key(fmt::format("{}host/{}", key_prefix_, r), deadline);
    if (h.status().code() == StatusCode::kUnknownError || superseded_) return h.status();  // connection lost
    if (!h.is_ok()) return Status::aborted(fmt::format("{} at the rendezvous store: {}", missing_ranks(r), h.status().message()));
    hosts[r] = *h;
    Result<std::string> name = store_->get(fmt::format("{}name/{}", key_prefix_, r), seconds_left(deadline));
    if (!name.is_ok()) return name.status();
    hostnames_[r] = *name;
  }
  std::vector<std::string> order;          // distinct hosts by lowest rank
  std::map<std::string, int> local_count;  // ranks per host so far
  std::vector<int> local_rank(hosts.size());
  for (size_t r = 0; r < hosts.size(); ++r) {
    if (local_count.count(hosts[r]) == 0) order.push_back(hosts[r]);
    local_rank[r] = local_count[hosts[r]]++;
  }
  const std::string& mine = hosts[info_.rank];
  info_.local_rank = local_rank[info_.rank];
  info_.local_size = local_count[mine];
  info_.cross_rank = 0;
  info_.cross_size = 0;
  for (const std::string& h : order) {
    if (local_count[h] > info_.local_rank) {
      if (h == mine) info_.cross_rank = info_.cross_size;
      ++info_.cross_size;
    }
  }
  info_.homogeneous = true;
  for (const auto& [h, n] : local_count) info_.homogeneous = info_.homogeneous && n == info_.local_size;
  return Status::ok();
}

Result<std::unique_ptr<ControlChannel>> TcpTransportProvider::create_control(const std::vector<int>& global_ranks,
                                                                             int set_id) {
  int me = -1;
  for (size_t i = 0; i < global_ranks.size(); ++i) {
    if (global_ranks[i] == info_.rank) me = static_cast<int>(i);
  }
  if (me < 0) return Status::invalid_argument(fmt::format("rank {} is not in process set {}", info_.rank, set_id));
  // Every member creates the channels of a set in the same order: the count names this one.
  const std::string prefix = fmt::format("{}ctl/{}/{}", key_prefix_, set_id, created_[set_id]++);
  Result<std::string> address = choose_listen_address(iface_);
  if (!address.is_ok()) return address.status();
  Result<os::Fd> listener = listen_on(*address, 0, SocketOptions{}, static_cast<int>(global_ranks.size()) + 8);
  if (!listener.is_ok()) return listener.status();
  KOROVOD_RETURN_IF_ERROR(
      store_->set(fmt::format("{}/{}", prefix, info_.rank), fmt::format("{}:{}", *address, local_port(*listener))));
  std::vector<std::string> endpoints;
  for (int r : global_ranks) {
    Result<std::string> e = store_->get(fmt::format("{}/{}", prefix, r), timeout_seconds_);
    if (!e.is_ok()) return e.status();
    endpoints.push_back(*e);
  }
  Result<std::vector<os::Fd>> peers =
      connect_mesh(*listener, endpoints, me, set_id, SocketOptions{}, timeout_seconds_, global_ranks, auth_);
  if (!peers.is_ok()) return peers.status();
  // No timeout on the control plane (as with MPI): ranks may idle between steps for any time; a
  // rank that dies closes its sockets and fails the others at once; a rank that stops is named
  // when the engine's watchdog interrupts the wait for it (ControlChannel::interrupt_wait).
  std::vector<std::string> names;
  for (int r : global_ranks) names.push_back(rank_name(r));
  auto mesh = std::make_unique<Mesh>(me, std::move(peers).value(), global_ranks, 0.0, "TCP control plane",
                                     std::move(names), mesh_family_, auth_.clock);
  return std::unique_ptr<ControlChannel>(std::make_unique<MeshControl>(std::move(mesh)));
}

void TcpTransportProvider::abort_job(int exit_code) { std::_Exit(exit_code); }

}  // namespace korovod::tcp
