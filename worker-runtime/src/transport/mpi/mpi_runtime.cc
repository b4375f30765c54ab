#include <fmt/format.h>

#include "korovod/mpi.h"
#include "transport/mpi/mpi_providers.h"
#include "transport/shm/shm_provider.h"
#ifdef KOROVOD_HAVE_NCCL
#include "transport/nccl/nccl_provider.h"
#endif
#include "transport/tcp/tcp_provider.h"

namespace korovod {

bool mpi_threads_supported() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) return false;
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  return provided == MPI_THREAD_MULTIPLE;
}

Result<RuntimeOptions> mpi_runtime_options(Config config, const void* mpi_comm,
                                           std::vector<std::vector<int>> process_sets,
                                           const std::vector<int>& comm_ranks) {
  Result<std::shared_ptr<mpi::MpiContext>> ctx =
      mpi::MpiContext::create(static_cast<const MPI_Comm*>(mpi_comm), config.mpi_threads_disable, comm_ranks);
  if (!ctx.is_ok()) return ctx.status();
  RuntimeOptions options;
  options.config = std::move(config);
  auto transport = std::make_shared<mpi::MpiTransportProvider>(*ctx);
  options.transport = transport;
  // First enabled backend wins: NCCL or host staging for GPU tensors (when built; enabled only
  // for device >= 0); for CPU tensors TCP when forced, else shared memory for sets on one host
  // (unless forced off); MPI for the rest and as the fallback.
  auto mpi_backends = std::make_shared<mpi::MpiBackendProvider>(*ctx);
#ifdef KOROVOD_HAVE_NCCL
  // Hierarchical allreduce of GPU tensors: NCCL inside a host, MPI across hosts. Host staging
  // (ranks sharing a GPU, or KOROVOD_GPU_OPERATIONS=staging) runs on the set's CPU data plane.
  const std::string host_id = options.config.host_id.empty() ? shm::host_identity() : options.config.host_id;
  nccl::NcclHierarchy hierarchy;
  if (options.config.hierarchical_allreduce) {
    hierarchy.cross = mpi_backends;
    hierarchy.host_id = host_id;
  }
  options.backends.push_back(std::make_shared<nccl::NcclBackendProvider>(
      transport, (*ctx)->info().local_rank, std::move(hierarchy),
      nccl::GpuPlaneOptions{gpu_operations_from(options.config.gpu_operations), host_id}));
#endif
  if (options.config.cpu_operations == "tcp") {
    tcp::TcpOptions tcp_options;
    tcp_options.iface = options.config.tcp_iface;
    tcp_options.segment_bytes = options.config.tcp_segment_bytes;
    tcp_options.timeout_seconds = options.config.collective_timeout_seconds;
    tcp_options.hierarchical_allreduce = options.config.hierarchical_allreduce;
    tcp_options.host_id = options.config.host_id;
    tcp_options.shm_geometry = shm::geometry_from(options.config);
    // MPI is the trusted channel: each set's rank 0 sends its sockets' secret over it.
    tcp_options.share_secret = true;
    tcp_options.auth.log = tcp::warning_log(options.config, (*ctx)->info().rank);
    options.backends.push_back(std::make_shared<tcp::TcpBackendProvider>(transport, tcp_options));
  } else if (options.config.cpu_operations != "mpi") {
    const shm::Geometry geometry = shm::geometry_from(options.config);
    options.backends.push_back(std::make_shared<shm::ShmBackendProvider>(transport, geometry,
                                                                         options.config.cpu_operations == "shm"));
  }
  options.backends.push_back(std::move(mpi_backends));
  options.process_sets = std::move(process_sets);
  return options;
}

Result<std::unique_ptr<Runtime>> init_mpi_runtime(std::vector<std::vector<int>> process_sets,
                                                  const void* mpi_comm, const std::vector<int>& comm_ranks) {
  Result<Config> config = parse_config(process_environment());
  if (!config.is_ok()) return config.status();
  Result<RuntimeOptions> options =
      mpi_runtime_options(std::move(config).value(), mpi_comm, std::move(process_sets), comm_ranks);
  if (!options.is_ok()) return options.status();
  return Runtime::create(std::move(options).value());
}

}  // namespace korovod
