#include "core/startup_line.h"

#include <fmt/format.h>

namespace korovod {

std::string startup_line(const WorldInfo& world, const std::string& control, const Backend* cpu, const Backend* gpu,
                         const std::vector<std::shared_ptr<BackendProvider>>& providers, const Config& config) {
  // Rank 0 has local rank 0, so its cross size is the number of hosts.
  std::string line = fmt::format("korovod: data plane: {} ({} rank{} on {} host{}), control: {}; GPU data plane: ",
                                 cpu ? cpu->name() : "none", world.size, world.size == 1 ? "" : "s",
                                 world.cross_size, world.cross_size == 1 ? "" : "s", control);
  std::string gpu_plane = "none (built without NCCL)";
  if (gpu) {
    gpu_plane = gpu->name();
    for (const auto& p : providers) {
      if (p->name() == gpu->name()) gpu_plane = p->description();
    }
    if (std::string own = gpu->description(); !own.empty()) gpu_plane = std::move(own);
  }
  line += gpu_plane;
  for (size_t i = 0; i < config.network_env.size(); ++i) {
    line += fmt::format("{}{}={}", i == 0 ? "; " : " ", config.network_env[i].first, config.network_env[i].second);
  }
  return line;
}

}  // namespace korovod
