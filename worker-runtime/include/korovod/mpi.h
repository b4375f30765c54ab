// Building a Runtime on Open MPI: control plane and CPU data plane over MPI. Initialises MPI
// with MPI_THREAD_MULTIPLE when the caller has not, and then finalizes it at process exit (never
// when a Runtime shuts down: the process may start another one). These live in
// libkorovod_mpi.so (CMake target korovod_mpi), which links libkorovod.so and libmpi;
// libkorovod.so itself never links MPI (its C ABI loads libkorovod_mpi.so when the job was
// started by mpirun).
#pragma once

#include <memory>
#include <vector>

#include "korovod/runtime.h"

namespace korovod {

// `mpi_comm` points at an MPI_Comm to run on (duplicated; the caller keeps ownership), or is
// null for MPI_COMM_WORLD. Kept as void* so this header does not pull in <mpi.h>.
// `comm_ranks` non-empty: run on those ranks of that communicator only (Horovod's
// init(comm=[0, 1])); a rank not listed gets an InvalidArgument error saying so.
// `env` (null = SystemEnv) names this host to the data planes and becomes RuntimeOptions::env.
Result<RuntimeOptions> mpi_runtime_options(Config config, const void* mpi_comm = nullptr,
                                           std::vector<std::vector<int>> process_sets = {},
                                           const std::vector<int>& comm_ranks = {},
                                           std::shared_ptr<Env> env = nullptr);

// Convenience: config from the process environment.
Result<std::unique_ptr<Runtime>> init_mpi_runtime(std::vector<std::vector<int>> process_sets = {},
                                                  const void* mpi_comm = nullptr,
                                                  const std::vector<int>& comm_ranks = {});
// MPI is initialised with MPI_THREAD_MULTIPLE (false before MPI is initialised).
bool mpi_threads_supported();

}  // namespace korovod
