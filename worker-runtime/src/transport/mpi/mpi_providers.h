// The MPI control plane (negotiation collectives) and CPU data plane, each on its own
// communicator per process set so they never interleave with the caller's MPI traffic.
#pragma once

#include <memory>

#include "transport/mpi/mpi_context.h"

namespace korovod::mpi {

class MpiTransportProvider final : public TransportProvider {
 public:
  explicit MpiTransportProvider(std::shared_ptr<MpiContext> ctx) : ctx_(std::move(ctx)) {}
  std::string name() const override { return "MPI"; }
  WorldInfo world() const override { return ctx_->info(); }
  Result<std::unique_ptr<ControlChannel>> create_control(const std::vector<int>& global_ranks,
                                                         int set_id) override;
  void abort_job(int exit_code) override { ctx_->abort(exit_code); }
  std::string rank_name(int global_rank) const override { return ctx_->rank_name(global_rank); }

 private:
  std::shared_ptr<MpiContext> ctx_;
};

class MpiBackendProvider final : public BackendProvider {
 public:
  explicit MpiBackendProvider(std::shared_ptr<MpiContext> ctx) : ctx_(std::move(ctx)) {}
  std::string name() const override { return "MPI"; }
  Result<std::unique_ptr<Backend>> create_backend(const std::vector<int>& global_ranks, int set_id) override;

 private:
  std::shared_ptr<MpiContext> ctx_;
};

}  // namespace korovod::mpi
