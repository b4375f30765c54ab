// Creates the NCCL backend of each process set. Nothing GPU-related happens here: the
// communicator is set up by the set's first GPU collective, so CPU-only jobs in an NCCL build
// pay one control channel per set and nothing else.
#pragma once

#include <memory>

#include "korovod/transport.h"

namespace korovod::nccl {

class NcclBackendProvider final : public BackendProvider {
 public:
  NcclBackendProvider(std::shared_ptr<TransportProvider> transport, int local_rank)
      : transport_(std::move(transport)), local_rank_(local_rank) {}
  std::string name() const override { return "NCCL"; }
  // "NCCL 2.23.4 (2 GPUs visible)" or "NCCL 2.23.4 (no NVIDIA GPU usable: cudaGetDeviceCount: ...)".
  std::string description() const override;
  Result<std::unique_ptr<Backend>> create_backend(const std::vector<int>& global_ranks, int set_id) override;

 private:
  std::shared_ptr<TransportProvider> transport_;
  int local_rank_;
};

}  // namespace korovod::nccl
