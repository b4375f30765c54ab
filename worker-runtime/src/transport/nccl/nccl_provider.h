// Creates the NCCL backend of each process set. Nothing GPU-related happens here: the
// communicator is set up by the set's first GPU collective, so CPU-only jobs in an NCCL build
// pay one control channel per set and nothing else.
#pragma once

#include <memory>
#include <string>

#include "korovod/transport.h"

namespace korovod::nccl {

// KOROVOD_HIERARCHICAL_ALLREDUCE: for a set that spans hosts with the same number of ranks on
// each, allreduce runs NCCL inside each host and `cross` (the CPU backend: MPI or TCP) across
// hosts (HierarchicalBackend); host identities are exchanged at set creation.
struct NcclHierarchy {
  std::shared_ptr<BackendProvider> cross;  // null: no hierarchical allreduce
  std::string host_id;                     // this rank's host identity
};

class NcclBackendProvider final : public BackendProvider {
 public:
  NcclBackendProvider(std::shared_ptr<TransportProvider> transport, int local_rank, NcclHierarchy hierarchy = {})
      : transport_(std::move(transport)), local_rank_(local_rank), hierarchy_(std::move(hierarchy)) {}
  std::string name() const override { return "NCCL"; }
  // "NCCL 2.23.4 (2 GPUs visible)" or "NCCL 2.23.4 (no NVIDIA GPU usable: cudaGetDeviceCount: ...)".
  std::string description() const override;
  Result<std::unique_ptr<Backend>> create_backend(const std::vector<int>& global_ranks, int set_id) override;

 private:
  std::shared_ptr<TransportProvider> transport_;
  int local_rank_;
  NcclHierarchy hierarchy_;
};

}  // namespace korovod::nccl
