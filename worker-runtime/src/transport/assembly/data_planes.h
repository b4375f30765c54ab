// The one place a runtime's data planes are built, for every way a job starts: mpirun
// (mpi_runtime_options), korovodrun or any rendezvous store, an elastic reset and a one-rank
// start (tcp_runtime_options). The start path sets up its control plane and discovers the world,
// then hands both here; plan_data_planes (data_plane_plan.h) decides which planes, this file
// builds them: NCCL (when built), shared memory, TCP, and the control plane's own fallback.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "korovod/config.h"
#include "korovod/env.h"
#include "korovod/transport.h"
#include "transport/assembly/data_plane_plan.h"

namespace korovod {
namespace tcp {
class TcpTransportProvider;
}

// The control plane a start path built, and what it discovered about this rank.
class ControlPlane {
 public:
  // `host` is this rank's machine (Env::host, read once by the start path): shared memory
  // compares host.id(), which only ranks sharing a kernel have in common. `env` (the start
  // path's) times the data planes' collective bounds (shared-memory and TCP waits) and answers
  // the shared memory's liveness looks.
  //
  // mpirun: MPI negotiates; `mpi_backends` is MPI's own data plane (the fallback). Under MPI the
  // world names no host identity (MPI found the local ranks itself), so `host_id` is Config's
  // KOROVOD_HOST_ID override, "" = host.id().
  static ControlPlane over_mpi(std::shared_ptr<TransportProvider> transport,
                               std::shared_ptr<BackendProvider> mpi_backends, const std::string& host_id,
                               const HostIdentity& host, std::shared_ptr<const Env> env);
  // A rendezvous store: TCP negotiates, and its job secret and mesh family are shared with the
  // TCP data plane. The data planes group ranks into hosts by the identity the transport
  // published (TcpTransportProvider::host_id), as the world's topology did.
  static ControlPlane over_tcp(std::shared_ptr<tcp::TcpTransportProvider> transport, const HostIdentity& host,
                               std::shared_ptr<const Env> env);

  ControlPlaneKind kind() const { return kind_; }
  const std::shared_ptr<TransportProvider>& transport() const { return transport_; }

 private:
  friend Result<std::vector<std::shared_ptr<BackendProvider>>> build_data_planes(const Config&, const ControlPlane&);
  ControlPlane() = default;

  ControlPlaneKind kind_ = ControlPlaneKind::kTcp;
  std::shared_ptr<TransportProvider> transport_;
  std::string host_id_;     // groups ranks into hosts (hierarchical planes, NCCL)
  std::string machine_id_;  // HostIdentity::id(): shared memory
  std::shared_ptr<const Env> env_;
  std::shared_ptr<BackendProvider> mpi_backends_;     // kMpi
  std::shared_ptr<tcp::TcpTransportProvider> tcp_;  // kTcp: the same object as transport_
};

// Refuses a Config this start cannot honour (plan_data_planes' errors), for a start path to call
// before it sets up its control plane.
Status check_data_planes(const Config& config, ControlPlaneKind control);

// The providers for RuntimeOptions::backends, in plan order (the first enabled one wins).
Result<std::vector<std::shared_ptr<BackendProvider>>> build_data_planes(const Config& config,
                                                                        const ControlPlane& control);

}  // namespace korovod
