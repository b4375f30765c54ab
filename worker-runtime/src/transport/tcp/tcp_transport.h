// The control plane without MPI. Rank 0 (or a launcher: KOROVOD_RENDEZVOUS_SERVER=external)
// hosts the rendezvous store; every rank publishes its host identity there (topology: local and
// cross ranks) and, for each process set, the address its control sockets listen on. A set's
// control channel is a Mesh of its members: gathers go straight to the set's rank 0, broadcasts
// straight from it, bit vectors to everyone.
//
// Keys start with "start<n>/", n = how many times this rank has started a runtime against this
// store (the store's counter "korovod/starts/<rank>"): every rank starts the same number of
// times, so a process that shuts down and starts again meets its peers under fresh keys even
// when the store outlived the first runtime (an external store).
//
// Elastic mode (TcpWorldConfig::elastic): rank and size come from the driver's newest round
// (transport/tcp/elastic.h) and the keys start with "r<round>/" instead.
//
// With a job secret (TcpWorldConfig::job_secret) the store and every control socket take only
// connections that prove it (auth.h); without one, rank 0 warns once that anyone who reaches
// the ports can join.
#pragma once

#include <map>
#include <memory>

#include "korovod/tcp.h"
#include "korovod/transport.h"
#include "transport/tcp/mesh.h"
#include "transport/tcp/mesh_setup.h"
#include "transport/tcp/store.h"

namespace korovod::tcp {

class TcpTransportProvider final : public TransportProvider {
 public:
  // `log` hears of refused connections (and rank 0's warning when there is no secret). `host`
  // (Env::host) is this rank's identity and hostname where the world leaves them "". Every bound
  // of the start and of the control channels' setup (the start timeout, connecting, handshakes,
  // the store's requests, the elastic join) runs on `clock`: the runtime's Env (null: the
  // system's clock).
  static Result<std::shared_ptr<TcpTransportProvider>> create(const TcpWorldConfig& world, const std::string& iface,
                                                              const HostIdentity& host, AuthLog log = {},
                                                              std::shared_ptr<const Clock> clock = nullptr);
  std::string name() const override { return "TCP"; }
  WorldInfo world() const override { return info_; }
  Result<std::unique_ptr<ControlChannel>> create_control(const std::vector<int>& global_ranks, int set_id) override;
  void abort_job(int exit_code) override;
  // The secret, log and clock every mesh of this job uses (the TCP data plane's too).
  const MeshAuth& auth() const { return auth_; }
  // Elastic mode, once the runtime on top has started: elastic/<round>/ready/<worker_id>.
  Status mark_elastic_ready(const std::string& worker_id);
  // "rank 2 on host worker-1": what errors call a global rank (the hosts as ranks published them).
  std::string rank_name(int global_rank) const override;
  // The host identity this rank published (KOROVOD_HOST_ID, else its Env's): the data planes
  // group ranks into hosts by it as the topology did.
  const std::string& host_id() const { return host_id_; }
  // Every mesh of this runtime, control and (through TcpOptions::family) data planes.
  const std::shared_ptr<MeshFamily>& mesh_family() const { return mesh_family_; }

 private:
  TcpTransportProvider() = default;
  // Connects to the store and learns the topology; starts over (new connection, new start
  // count) when the connection breaks before the deadline, as it does when this rank reached
  // the store of rank 0's previous runtime just before it closed.
  Status rendezvous(const Endpoint& store, const std::string& host_id, Deadline deadline);
  // Elastic: joins the driver's round (waiting for it up to the elastic timeout), then meets the
  // round's other workers under "r<round>/" within the start timeout.
  Status elastic_rendezvous(const Endpoint& store, const TcpWorldConfig& world, const std::string& host_id);
  Status learn_topology(const std::string& host_id, const std::string& hostname, Deadline deadline);
  // A peer's key of this rendezvous. Elastic: polled, and given up (kAborted, superseded_ set)
  // as soon as the driver publishes a newer round than the one joined: a peer that failed to
  // start must not hold the others for the whole start timeout.
  Result<std::string> wait_for_peer_key(const std::string& key, Deadline deadline);
  std::string missing_ranks(int first);  // "rank 1 did not arrive" / "ranks 1, 3 did not arrive"

  std::unique_ptr<StoreServer> server_;  // rank 0 only
  std::unique_ptr<StoreClient> store_;
  Endpoint store_endpoint_;  // where store_ is connected
  std::string key_prefix_;  // "start<n>/", or "r<round>/" in elastic mode
  int64_t joined_round_ = 0;  // elastic: the driver's round this rendezvous is for
  bool superseded_ = false;   // elastic: a newer round came while waiting for a peer
  WorldInfo info_;
  std::string host_id_;                 // this rank's, as published
  std::string hostname_;                // this rank's, as published
  std::vector<std::string> hostnames_;  // per global rank, for errors
  std::string iface_;
  MeshAuth auth_;
  double timeout_seconds_ = 30;
  std::map<int, int> created_;  // control channels made per set id: part of the store keys
  std::shared_ptr<MeshFamily> mesh_family_ = std::make_shared<MeshFamily>();
};

}  // namespace korovod::tcp
