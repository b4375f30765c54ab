// A ControlChannel over a Mesh (the control plane without MPI): length-prefixed gathers to the
// set's rank 0, broadcasts from it, and bit vectors exchanged with everyone and reduced in rank
// order.
#pragma once

#include <memory>

#include "korovod/transport.h"
#include "transport/tcp/mesh.h"

namespace korovod::tcp {

class MeshControl final : public ControlChannel {
 public:
  explicit MeshControl(std::unique_ptr<Mesh> mesh) : mesh_(std::move(mesh)), io_(static_cast<size_t>(mesh_->size())) {}
  int rank() const override { return mesh_->rank(); }
  int size() const override { return mesh_->size(); }
  Status allreduce_bits(std::vector<uint64_t>& bits, BitwiseOp op) override;
  Result<std::vector<std::string>> gather_to_root(const std::string& mine) override;
  Status broadcast_from_root(std::string& bytes) override;
  bool interrupt_wait(const std::string& why) override { return mesh_->interrupt(why); }

 private:
  void clear_io();

  std::unique_ptr<Mesh> mesh_;
  std::vector<PeerIo> io_;
};

}  // namespace korovod::tcp
