// The contract between libkorovod.so (capi/mpi_loader.cc, which dlopens the plugin) and
// libkorovod_mpi.so (transport/assembly/mpi_plugin.cc). Both are built from this tree by the same
// compiler, so C++ types cross it; the one C symbol makes the lookup a plain dlsym, and the
// version guards against a plugin file left over from another build.
#pragma once

#include <memory>
#include <vector>

#include "korovod/runtime.h"

namespace korovod {

inline constexpr int kMpiPluginAbiVersion = 1;
inline constexpr const char* kMpiPluginFile = "libkorovod_mpi.so";
inline constexpr const char* kMpiPluginSymbol = "korovod_mpi_plugin";

struct MpiStartRequest {
  const void* mpi_comm = nullptr;  // an MPI_Comm*; null = MPI_COMM_WORLD
  std::vector<int> comm_ranks;     // non-empty: only these ranks of it (Horovod's init(comm=[...]))
  std::vector<std::vector<int>> process_sets;
};

struct MpiPlugin {
  int abi_version;
  // A Runtime over MPI, config from the process environment.
  Result<std::unique_ptr<Runtime>> (*start)(const MpiStartRequest& request);
  bool (*threads_supported)();  // MPI initialised with MPI_THREAD_MULTIPLE
};

}  // namespace korovod

// Exported by libkorovod_mpi.so.
extern "C" const korovod::MpiPlugin* korovod_mpi_plugin(void);
