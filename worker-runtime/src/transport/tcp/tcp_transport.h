// The control plane without MPI. Rank 0 hosts the rendezvous store; every rank publishes its
// host identity there (topology: local and cross ranks) and, for each process set, the address
// its control sockets listen on. A set's control channel is a Mesh of its members: gathers go
// straight to the set's rank 0, broadcasts straight from it, bit vectors to everyone.
#pragma once

#include <map>
#include <memory>

#include "korovod/tcp.h"
#include "korovod/transport.h"
#include "transport/tcp/store.h"

namespace korovod::tcp {

class TcpTransportProvider final : public TransportProvider {
 public:
  static Result<std::shared_ptr<TcpTransportProvider>> create(const TcpWorldConfig& world, const std::string& iface);
  std::string name() const override { return "TCP"; }
  WorldInfo world() const override { return info_; }
  Result<std::unique_ptr<ControlChannel>> create_control(const std::vector<int>& global_ranks, int set_id) override;
  void abort_job(int exit_code) override;

 private:
  TcpTransportProvider() = default;
  Status learn_topology(const std::string& host_id);

  std::unique_ptr<StoreServer> server_;  // rank 0 only
  std::unique_ptr<StoreClient> store_;
  WorldInfo info_;
  std::string iface_;
  double timeout_seconds_ = 30;
  std::map<int, int> created_;  // control channels made per set id: part of the store keys
};

}  // namespace korovod::tcp
