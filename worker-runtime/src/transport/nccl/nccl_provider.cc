#include "transport/nccl/nccl_provider.h"

#include <fmt/format.h>

#include <optional>

#include "transport/common/hierarchical_backend.h"
#include "transport/common/host_groups.h"
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
  std::optional<HostGroups> groups;
  if (hierarchy_.cross) {
    Result<std::vector<std::string>> hosts = allgather_lines(**control, hierarchy_.host_id);
    if (!hosts.is_ok()) return hosts.status();
    groups = host_groups(*hosts, global_ranks, (*control)->rank());
  }
  auto flat = std::make_unique<NcclBackend>(std::move(control).value(), local_rank_);
  if (!groups) return std::unique_ptr<Backend>(std::move(flat));
  // Every member has the same view of the hosts, so all build the same pieces, in this order.
  Result<std::unique_ptr<ControlChannel>> local_control = transport_->create_control(groups->local, set_id);
  if (!local_control.is_ok()) return local_control.status();
  auto local = std::make_unique<NcclBackend>(std::move(local_control).value(), local_rank_);
  Result<std::unique_ptr<Backend>> cross = hierarchy_.cross->create_backend(groups->cross, set_id);
  if (!cross.is_ok()) return cross.status();
  return std::unique_ptr<Backend>(
      std::make_unique<HierarchicalBackend>(std::move(flat), std::move(local), std::move(cross).value()));
}

}  // namespace korovod::nccl
