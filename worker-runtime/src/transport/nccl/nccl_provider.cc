#include "transport/nccl/nccl_provider.h"

#include <fmt/format.h>

#include "transport/nccl/nccl_backend.h"
#include "transport/nccl/nccl_mapping.h"

namespace korovod::nccl {

std::string NcclBackendProvider::description() const {
  Result<int> gpus = visible_gpus();
  return fmt::format("NCCL {} ({})", nccl_version_string(),
                     gpus.is_ok() ? fmt::format("{} GPU{} visible", *gpus, *gpus == 1 ? "" : "s")
                                  : gpus.status().message());
}

Result<std::unique_ptr<Backend>> NcclBackendProvider::create_backend(const std::vector<int>& global_ranks,
                                                                     int set_id) {
  Result<std::unique_ptr<ControlChannel>> control = transport_->create_control(global_ranks, set_id);
  if (!control.is_ok()) return control.status();
  return std::unique_ptr<Backend>(std::make_unique<NcclBackend>(std::move(control).value(), local_rank_));
}

}  // namespace korovod::nccl
