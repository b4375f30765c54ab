#include <fmt/format.h>

#include "algorithms/executor.h"
#include "korovod/mpi.h"
#include "transport/assembly/data_planes.h"
#include "transport/mpi/mpi_providers.h"

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
                                           const std::vector<int>& comm_ranks, std::shared_ptr<Env> env) {
  Result<std::shared_ptr<mpi::MpiContext>> ctx =
      mpi::MpiContext::create(static_cast<const MPI_Comm*>(mpi_comm), config.mpi_threads_disable, comm_ranks,
                              config.hostname);
  if (!ctx.is_ok()) return ctx.status();
  RuntimeOptions options;
  options.config = std::move(config);
  options.env = env ? std::move(env) : std::make_shared<SystemEnv>();
  auto transport = std::make_shared<mpi::MpiTransportProvider>(*ctx);
  options.transport = transport;
  Result<std::vector<std::shared_ptr<BackendProvider>>> backends = build_data_planes(
      options.config,
      ControlPlane::over_mpi(transport, std::make_shared<mpi::MpiBackendProvider>(*ctx), options.config.host_id,
                             options.env->host(), options.env));
  if (!backends.is_ok()) return backends.status();
  options.backends = std::move(backends).value();
  options.process_sets = std::move(process_sets);
  options.make_executor = make_executor;  // the collectives' executor (algorithms/executor.h)
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
