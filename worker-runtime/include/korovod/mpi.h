// Building a Runtime on Open MPI: control plane and CPU data plane over MPI. Initialises MPI
// with MPI_THREAD_MULTIPLE when the caller has not (and finalizes it on shutdown then).
#pragma once

#include <memory>
#include <vector>

#include "korovod/runtime.h"

namespace korovod {

// `mpi_comm` points at an MPI_Comm to run on (duplicated; the caller keeps ownership), or is
// null for MPI_COMM_WORLD. Kept as void* so this header does not pull in <mpi.h>.
Result<RuntimeOptions> mpi_runtime_options(Config config, const void* mpi_comm = nullptr,
                                           std::vector<std::vector<int>> process_sets = {});

// Convenience: config from the process environment, world communicator.
Result<std::unique_ptr<Runtime>> init_mpi_runtime(std::vector<std::vector<int>> process_sets = {},
                                                  const void* mpi_comm = nullptr);
bool mpi_threads_supported();

}  // namespace korovod
