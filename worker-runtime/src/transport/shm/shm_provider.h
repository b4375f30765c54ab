// Creates the shared-memory backend of a process set. Rendezvous goes through the control
// plane the runtime already has (MPI, or the TCP transport without MPI): the members compare host
// identities, each creates and pre-faults its segment, they exchange names, map each other's,
// and unlink the names as soon as everyone has mapped them.
#pragma once

#include <memory>
#include <string>

#include "korovod/config.h"
#include "korovod/transport.h"
#include "transport/shm/shm_group.h"

namespace korovod::shm {

class ShmBackendProvider final : public BackendProvider {
 public:
  // forced (KOROVOD_CPU_OPERATIONS=shm): failing to set up shared memory on one host is an
  // error; otherwise the set quietly uses the next backend. `machine_id`: this rank's
  // Env::host().id() (not KOROVOD_HOST_ID: only ranks that share a kernel can map each other's
  // segments); a set whose members name different machines gets no shared memory.
  // `env`: what the groups' waits are timed by and their liveness looks ask (the runtime's Env;
  // null = the system's).
  ShmBackendProvider(std::shared_ptr<TransportProvider> transport, Geometry geometry, bool forced,
                     std::string machine_id, std::shared_ptr<const Env> env = nullptr)
      : transport_(std::move(transport)),
        geometry_(geometry),
        forced_(forced),
        machine_id_(std::move(machine_id)),
        env_(std::move(env)) {}
  std::string name() const override { return "SHM"; }
  Result<std::unique_ptr<Backend>> create_backend(const std::vector<int>& global_ranks, int set_id) override;

 private:
  std::shared_ptr<TransportProvider> transport_;
  Geometry geometry_;
  bool forced_;
  std::string machine_id_;
  std::shared_ptr<const Env> env_;
  int created_ = 0;  // segments created by this provider: part of the unique name
};

// The ring geometry the configuration asks for (slots, streaming threshold, wait bound).
Geometry geometry_from(const Config& config);

}  // namespace korovod::shm
