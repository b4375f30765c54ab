// Rank 0's one line, at startup, about the transport the runtime actually chose, e.g.
//   korovod: data plane: SHM (4 ranks on 1 host), control: SHM (MPI for setup); GPU data plane: NCCL 2.23.4
//   (4 GPUs visible); NCCL_IB_HCA=mlx5_0 NCCL_SOCKET_IFNAME=eth0
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "korovod/config.h"
#include "korovod/transport.h"

namespace korovod {

// cpu / gpu: the global set's backends for host and device 0 tensors (null: none enabled).
std::string startup_line(const WorldInfo& world, const std::string& control, const Backend* cpu, const Backend* gpu,
                         const std::vector<std::shared_ptr<BackendProvider>>& providers, const Config& config);

}  // namespace korovod
