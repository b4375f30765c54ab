#include "transport/nccl/nccl_provider.h"

#include <fmt/format.h>

#include <optional>

#include "transport/common/hierarchical_backend.h"
#include "transport/common/host_groups.h"
#include "transport/common/staging_backend.h"
#include "transport/nccl/cuda_copier.h"
#include "transport/nccl/nccl_backend.h"
#include "transport/nccl/nccl_mapping.h"

namespace korovod::nccl {
namespace {

// The PCI bus id of the GPU this rank's NCCL backend would select without a tensor to go by;
// "" when none is usable.
std::string default_gpu(int local_rank) {
  Result<int> gpus = visible_gpus();
  return gpus.is_ok() ? gpu_bus_id(local_rank % *gpus) : "";
}

}  // namespace

NcclBackendProvider::NcclBackendProvider(std::shared_ptr<TransportProvider> transport, int local_rank,
                                         NcclHierarchy hierarchy, GpuPlaneOptions plane)
    : transport_(std::move(transport)), local_rank_(local_rank), hierarchy_(std::move(hierarchy)),
      plane_(std::move(plane)) {
  if (plane_.host_id.empty()) plane_.host_id = hierarchy_.host_id;
}

std::string NcclBackendProvider::gpus_visible() const {
  Result<int> gpus = visible_gpus();
  return gpus.is_ok() ? fmt::format("{} GPU{} visible", *gpus, *gpus == 1 ? "" : "s") : gpus.status().message();
}

std::string NcclBackendProvider::description() const {
  return fmt::format("NCCL {} ({}{})", nccl_version_string(), gpus_visible(),
                     plane_.mode == GpuOperations::kNccl ? "; KOROVOD_GPU_OPERATIONS=nccl" : "");
}

Result<std::unique_ptr<Backend>> NcclBackendProvider::create_backend(const std::vector<int>& global_ranks,
                                                                     int set_id) {
  Result<std::unique_ptr<ControlChannel>> control = transport_->create_control(global_ranks, set_id);
  if (!control.is_ok()) return control.status();
  Result<std::vector<std::string>> lines =
      allgather_lines(**control, gpu_identity_line({plane_.host_id, default_gpu(local_rank_)}));
  if (!lines.is_ok()) return lines.status();
  std::vector<GpuIdentity> members;
  std::vector<std::string> hosts;
  for (const std::string& line : *lines) {
    members.push_back(parse_gpu_identity(line));
    hosts.push_back(members.back().host);
  }
  const GpuPlaneChoice choice = choose_gpu_plane(plane_.mode, members, global_ranks);
  if (choice.staging) {
    return std::unique_ptr<Backend>(std::make_unique<StagingBackend>(
        std::make_unique<CudaCopier>(), (*control)->rank(), (*control)->size(),
        fmt::format("{}; {}", choice.why, gpus_visible())));
  }
  std::optional<HostGroups> groups;
  if (hierarchy_.cross) groups = host_groups(hosts, global_ranks, (*control)->rank());
  auto flat = std::make_unique<NcclBackend>(std::move(control).value(), local_rank_, plane_.host_id);
  if (!groups) return std::unique_ptr<Backend>(std::move(flat));
  // Every member has the same view of the hosts, so all build the same pieces, in this order.
  Result<std::unique_ptr<ControlChannel>> local_control = transport_->create_control(groups->local, set_id);
  if (!local_control.is_ok()) return local_control.status();
  auto local = std::make_unique<NcclBackend>(std::move(local_control).value(), local_rank_, plane_.host_id);
  Result<std::unique_ptr<Backend>> cross = hierarchy_.cross->create_backend(groups->cross, set_id);
  if (!cross.is_ok()) return cross.status();
  return std::unique_ptr<Backend>(
      std::make_unique<HierarchicalBackend>(std::move(flat), std::move(local), std::move(cross).value()));
}

}  // namespace korovod::nccl
