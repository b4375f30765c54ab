#include "transport/assembly/data_planes.h"

#include <fmt/format.h>

#include "transport/shm/shm_provider.h"
#include "transport/tcp/tcp_provider.h"
#include "transport/tcp/tcp_transport.h"
#ifdef KOROVOD_HAVE_NCCL
#include "transport/nccl/nccl_provider.h"
#endif

namespace korovod {
namespace {

#ifdef KOROVOD_HAVE_NCCL
constexpr bool kNcclBuilt = true;
#else
constexpr bool kNcclBuilt = false;
#endif

tcp::TcpOptions tcp_options_for(const Config& config, const DataPlanePlan& plan, const std::string& host_id,
                                const std::string& machine_id) {
  tcp::TcpOptions options;
  options.iface = config.tcp_iface;
  options.segment_bytes = config.tcp_segment_bytes;
  options.timeout_seconds = config.collective_timeout_seconds;
  options.hierarchical_allreduce = plan.hierarchical_allreduce;
  options.host_id = host_id;
  options.machine_id = machine_id;
  options.shm_geometry = shm::geometry_from(config);
  options.share_secret = plan.tcp_shares_secret;
  return options;
}

}  // namespace

ControlPlane ControlPlane::over_mpi(std::shared_ptr<TransportProvider> transport,
                                    std::shared_ptr<BackendProvider> mpi_backends, const std::string& host_id,
                                    const HostIdentity& host, std::shared_ptr<const Env> env) {
  ControlPlane c;
  c.kind_ = ControlPlaneKind::kMpi;
  c.transport_ = std::move(transport);
  c.mpi_backends_ = std::move(mpi_backends);
  c.host_id_ = host_id.empty() ? host.id() : host_id;
  c.machine_id_ = host.id();
  c.env_ = std::move(env);
  return c;
}

ControlPlane ControlPlane::over_tcp(std::shared_ptr<tcp::TcpTransportProvider> transport, const HostIdentity& host,
                                    std::shared_ptr<const Env> env) {
  ControlPlane c;
  c.kind_ = ControlPlaneKind::kTcp;
  c.host_id_ = transport->host_id();
  c.machine_id_ = host.id();
  c.env_ = std::move(env);
  c.transport_ = transport;
  c.tcp_ = std::move(transport);
  return c;
}

Status check_data_planes(const Config& config, ControlPlaneKind control) {
  return plan_data_planes(config, control, kNcclBuilt).status();
}

Result<std::vector<std::shared_ptr<BackendProvider>>> build_data_planes(const Config& config,
                                                                        const ControlPlane& control) {
  Result<DataPlanePlan> plan = plan_data_planes(config, control.kind_, kNcclBuilt);
  if (!plan.is_ok()) return plan.status();
  const WorldInfo world = control.transport_->world();
  const std::string& host_id = control.host_id_;

  std::shared_ptr<BackendProvider> tcp_backends;
  if (plan->has(DataPlane::kTcp)) {
    tcp::TcpOptions options = tcp_options_for(config, *plan, host_id, control.machine_id_);
    options.env = control.env_;
    if (control.tcp_) {
      options.auth = control.tcp_->auth();
      options.family = control.tcp_->mesh_family();
    } else {
      options.auth.log = tcp::warning_log(config, world.rank);
    }
    tcp_backends = std::make_shared<tcp::TcpBackendProvider>(control.transport_, std::move(options));
  }
  std::shared_ptr<BackendProvider> fallback =
      plan->fallback() == DataPlane::kMpi ? control.mpi_backends_ : tcp_backends;
  if (!fallback) {
    return Status::precondition(fmt::format("the {} control plane brought no {} data plane",
                                            control.transport_->name(), data_plane_name(plan->fallback())));
  }

  std::vector<std::shared_ptr<BackendProvider>> providers;
  for (DataPlane plane : plan->order) {
    switch (plane) {
      case DataPlane::kNccl: {
#ifdef KOROVOD_HAVE_NCCL
        // Hierarchical allreduce of GPU tensors: NCCL inside a host, the fallback plane across.
        nccl::NcclHierarchy hierarchy;
        if (plan->hierarchical_allreduce) {
          hierarchy.cross = fallback;
          hierarchy.host_id = host_id;
        }
        providers.push_back(std::make_shared<nccl::NcclBackendProvider>(
            control.transport_, world.local_rank, std::move(hierarchy),
            nccl::GpuPlaneOptions{plan->gpu_operations, host_id}));
#endif
        break;
      }
      case DataPlane::kShm:
        providers.push_back(std::make_shared<shm::ShmBackendProvider>(control.transport_, shm::geometry_from(config),
                                                                      plan->shm_forced, control.machine_id_,
                                                                      control.env_));
        break;
      case DataPlane::kTcp:
        providers.push_back(tcp_backends);
        break;
      case DataPlane::kMpi:
        providers.push_back(control.mpi_backends_);
        break;
    }
  }
  return providers;
}

}  // namespace korovod
