// Which data plane a process set's GPU tensors get. NCCL refuses two ranks of one communicator
// on one GPU ("Duplicate GPU detected"), so a set whose members share a GPU stages its GPU
// tensors through host memory instead (staging_backend.h). At set creation every member sends
// its host identity and the PCI bus id of the GPU it will use over the set's control channel —
// the bus id because that is what NCCL compares (MIG instances of one GPU share it) — and all
// members take the same decision from the same lines. KOROVOD_GPU_OPERATIONS forces either.
#pragma once

#include <string>
#include <vector>

namespace korovod {

enum class GpuOperations { kAuto, kNccl, kStaging };

// Config::gpu_operations ("", "nccl", "staging") as the enum.
GpuOperations gpu_operations_from(const std::string& config_value);

// What one member contributes: its host identity and its GPU's PCI bus id ("" when it has no
// usable GPU; it then shares nothing).
struct GpuIdentity {
  std::string host;
  std::string gpu;
};
std::string gpu_identity_line(const GpuIdentity& id);  // one line, for allgather_lines
GpuIdentity parse_gpu_identity(const std::string& line);

// Members (by `labels`, e.g. global ranks, in the same order) that share a GPU on one host:
// "ranks 0 and 1 share GPU 0000:3B:00.0", several groups joined by "; ". "" when none do.
std::string shared_gpus(const std::vector<GpuIdentity>& members, const std::vector<int>& labels);

struct GpuPlaneChoice {
  bool staging = false;
  std::string why;  // for the startup line: why staging, or what forced NCCL ("" in the usual case)
};
GpuPlaneChoice choose_gpu_plane(GpuOperations mode, const std::vector<GpuIdentity>& members,
                                const std::vector<int>& global_ranks);

}  // namespace korovod
