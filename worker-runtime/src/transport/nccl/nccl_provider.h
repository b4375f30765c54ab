// Creates the GPU data plane of each process set: the NCCL backend, or host staging where the
// set's members share a GPU. No GPU is touched here beyond asking which one this rank would use
// (cudaGetDeviceCount, cudaDeviceGetPCIBusId: no context is created); the NCCL communicator is
// set up by the set's first GPU collective, so CPU-only jobs in an NCCL build pay one control
// channel and one exchange of host and GPU per set.
#pragma once

#include <memory>
#include <string>

#include "korovod/transport.h"
#include "transport/common/gpu_plane.h"

namespace korovod::nccl {

// KOROVOD_HIERARCHICAL_ALLREDUCE: for a set that spans hosts with the same number of ranks on
// each, allreduce runs NCCL inside each host and `cross` (the CPU backend: MPI or TCP) across
// hosts (HierarchicalBackend); host identities are exchanged at set creation.
struct NcclHierarchy {
  std::shared_ptr<BackendProvider> cross;  // null: no hierarchical allreduce
  std::string host_id;                     // this rank's host identity
};

// Which GPU data plane each set gets (gpu_plane.h): NCCL, or host staging through the set's CPU
// data plane when its members share a GPU (kAuto) or when forced.
struct GpuPlaneOptions {
  GpuOperations mode = GpuOperations::kAuto;  // Config::gpu_operations (KOROVOD_GPU_OPERATIONS)
  std::string host_id;                        // this rank's host identity; "" = the hierarchy's
};

class NcclBackendProvider final : public BackendProvider {
 public:
  NcclBackendProvider(std::shared_ptr<TransportProvider> transport, int local_rank, NcclHierarchy hierarchy = {},
                      GpuPlaneOptions plane = {});
  std::string name() const override { return "NCCL"; }
  // "NCCL 2.23.4 (2 GPUs visible)" or "NCCL 2.23.4 (no NVIDIA GPU usable: cudaGetDeviceCount: ...)",
  // naming KOROVOD_GPU_OPERATIONS=nccl when that forces it. (A set that stages says so itself.)
  std::string description() const override;
  // Collective: exchanges every member's host and GPU (this rank's: local_rank % visible GPUs,
  // the GPU the NCCL backend will pick unless its tensors say otherwise), then builds the NCCL
  // backend (hierarchical when configured and the set's shape allows) or a StagingBackend.
  Result<std::unique_ptr<Backend>> create_backend(const std::vector<int>& global_ranks, int set_id) override;

 private:
  std::string gpus_visible() const;  // "2 GPUs visible" or why none is usable

  std::shared_ptr<TransportProvider> transport_;
  int local_rank_;
  NcclHierarchy hierarchy_;
  GpuPlaneOptions plane_;
};

}  // namespace korovod::nccl
