#include "transport/common/gpu_plane.h"

#include <fmt/format.h>

#include <map>
#include <utility>

namespace korovod {

GpuOperations gpu_operations_from(const std::string& config_value) {
  if (config_value == "nccl") return GpuOperations::kNccl;
  if (config_value == "staging") return GpuOperations::kStaging;
  return GpuOperations::kAuto;
}

std::string gpu_identity_line(const GpuIdentity& id) {
  // The bus id goes last, after a tab: a host identity (KOROVOD_HOST_ID) may hold spaces.
  return id.host + "\t" + (id.gpu.empty() ? "-" : id.gpu);
}

GpuIdentity parse_gpu_identity(const std::string& line) {
  const size_t tab = line.rfind('\t');
  if (tab == std::string::npos) return {line, ""};
  std::string gpu = line.substr(tab + 1);
  return {line.substr(0, tab), gpu == "-" ? "" : std::move(gpu)};
}

std::string shared_gpus(const std::vector<GpuIdentity>& members, const std::vector<int>& labels) {
  // (host, bus id) -> members, in the order each GPU first appears.
  std::map<std::pair<std::string, std::string>, std::vector<int>> users;
  std::vector<std::pair<std::string, std::string>> order;
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i].gpu.empty()) continue;
    auto key = std::make_pair(members[i].host, members[i].gpu);
    if (users.count(key) == 0) order.push_back(key);
    users[key].push_back(i < labels.size() ? labels[i] : static_cast<int>(i));
  }
  std::string out;
  for (const auto& key : order) {
    const std::vector<int>& ranks = users[key];
    if (ranks.size() < 2) continue;
    const std::string who = ranks.size() == 2 ? fmt::format("{} and {}", ranks[0], ranks[1])
                                              : fmt::format("{}", fmt::join(ranks, ", "));
    out += fmt::format("{}ranks {} share GPU {}", out.empty() ? "" : "; ", who, key.second);
  }
  return out;
}

GpuPlaneChoice choose_gpu_plane(GpuOperations mode, const std::vector<GpuIdentity>& members,
                                const std::vector<int>& global_ranks) {
  const std::string shared = shared_gpus(members, global_ranks);
  switch (mode) {
    case GpuOperations::kStaging:
      return {true, "KOROVOD_GPU_OPERATIONS=staging" + (shared.empty() ? "" : "; " + shared)};
    case GpuOperations::kNccl:
      return {false, "KOROVOD_GPU_OPERATIONS=nccl"};
    case GpuOperations::kAuto:
      break;
  }
  if (shared.empty()) return {false, ""};
  return {true, shared + ", which NCCL refuses"};
}

}  // namespace korovod
