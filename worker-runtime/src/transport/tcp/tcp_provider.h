// Creates the TCP backend of a process set. Rendezvous goes through the control plane the
// runtime already has (MPI's ControlChannel, or one over the rendezvous store): every member
// listens on an ephemeral port, the members exchange "address:port", rank i connects to every
// lower rank and accepts every higher one (each connection opens with the job-secret handshake,
// mesh_setup.h, naming the set and the rank), and all agree on the outcome so no rank is left
// waiting.
#pragma once

#include <memory>
#include <string>

#include "korovod/config.h"
#include "korovod/transport.h"
#include "transport/common/host_groups.h"
#include "transport/tcp/mesh.h"
#include "transport/tcp/mesh_setup.h"
#include "transport/shm/shm_group.h"

namespace korovod::tcp {

struct TcpOptions {
  std::string iface;                   // "" = the hostname's address, else loopback
  int64_t segment_bytes = 256 * 1024;  // pipeline granularity of the ring collectives
  double timeout_seconds = 60.0;       // no progress for this long fails a collective; 0 = never
  int socket_buffer_bytes = 4 << 20;   // SO_SNDBUF / SO_RCVBUF
  // Sets that span hosts with several ranks each: shared memory within a host, TCP across
  // (HierarchicalBackend). host_id groups the ranks into hosts (KOROVOD_HOST_ID, else
  // machine_id); machine_id (Env::host().id()) is what the shared memory inside a host checks.
  bool hierarchical_allreduce = false;
  std::string host_id;
  std::string machine_id;
  // What timeout_seconds, the set's connection setup (unless auth.clock says otherwise) and the
  // shared-memory waits inside a host are timed by, and what the shared memory's liveness looks
  // ask: the runtime's Env; null = the system's.
  std::shared_ptr<const Env> env;
  shm::Geometry shm_geometry;
  // What the set's connections prove (the TCP transport's secret). share_secret: the set's rank
  // 0 generates a fresh secret and broadcasts it over the control channel before any socket is
  // opened (under MPI, whose channel is trusted: the ranks need no secret of their own).
  MeshAuth auth;
  bool share_secret = false;
  // Shared with the control plane's meshes when that is TCP too (MeshFamily); null: the data
  // meshes of this provider form one of their own.
  std::shared_ptr<MeshFamily> family;
};

// Refused connections and other security warnings, through a Logger at WARNING (Config's level,
// time stamp and this rank).
AuthLog warning_log(const Config& config, int rank);


class TcpBackendProvider final : public BackendProvider {
 public:
  TcpBackendProvider(std::shared_ptr<TransportProvider> transport, TcpOptions options)
      : transport_(std::move(transport)), options_(std::move(options)) {
    if (!options_.family) options_.family = std::make_shared<MeshFamily>();
  }
  std::string name() const override { return "TCP"; }
  Result<std::unique_ptr<Backend>> create_backend(const std::vector<int>& global_ranks, int set_id) override;

 private:
  Result<std::unique_ptr<Backend>> create_flat(ControlChannel& ctl, const std::vector<int>& global_ranks, int set_id);
  Result<std::unique_ptr<Backend>> create_hierarchical(const HostGroups& groups, int set_id,
                                                       std::unique_ptr<Backend> flat);

  std::shared_ptr<TransportProvider> transport_;
  TcpOptions options_;
};

}  // namespace korovod::tcp
