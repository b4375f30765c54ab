// libkorovod_mpi.so's entry point for libkorovod.so's loader (capi/mpi_plugin_abi.h).
#include "capi/mpi_plugin_abi.h"
#include "korovod/mpi.h"

namespace korovod {
namespace {

Result<std::unique_ptr<Runtime>> start(const MpiStartRequest& request) {
  return init_mpi_runtime(request.process_sets, request.mpi_comm, request.comm_ranks);
}

}  // namespace
}  // namespace korovod

extern "C" const korovod::MpiPlugin* korovod_mpi_plugin(void) {
  static constexpr korovod::MpiPlugin kPlugin{korovod::kMpiPluginAbiVersion, &korovod::start,
                                              &korovod::mpi_threads_supported};
  return &kPlugin;
}
