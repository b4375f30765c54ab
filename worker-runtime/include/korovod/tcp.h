// Building a Runtime without MPI: ranks meet at a rendezvous store that rank 0 hosts, the
// control plane (negotiation) and the CPU data plane run over TCP sockets (shared memory between
// ranks of one host unless KOROVOD_CPU_OPERATIONS=tcp). Environment, as a launcher sets it
// (names and defaults: docs/runtime-config.md):
//   KOROVOD_RENDEZVOUS_ADDR, KOROVOD_RENDEZVOUS_PORT  (HOROVOD_GLOO_RENDEZVOUS_ADDR / _PORT)
//   KOROVOD_RANK, KOROVOD_SIZE                        (HOROVOD_RANK / HOROVOD_SIZE)
//   KOROVOD_HOST_ID     optional host identity (default: hostname + boot id); ranks with the
//                       same identity are one host (local rank/size, cross rank/size)
//   KOROVOD_START_TIMEOUT  seconds to wait for every rank at the store (HOROVOD_START_TIMEOUT, 30)
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "korovod/runtime.h"

namespace korovod {

struct TcpWorldConfig {
  std::string rendezvous_addr;  // numeric IPv4 or a host name
  int rendezvous_port = 0;
  int rank = -1, size = 0;
  std::string host_id;                // "" = hostname + boot id
  double start_timeout_seconds = 30;  // every rank at the store, every connection made
};

// Reads the variables above from `env`; a missing or malformed one is an InvalidArgument error
// naming it.
Result<TcpWorldConfig> parse_tcp_world(const EnvMap& env);
bool tcp_rendezvous_configured(const EnvMap& env);  // KOROVOD_/HOROVOD_GLOO_RENDEZVOUS_ADDR set

// Rank 0 starts the store; every rank connects, publishes its host identity and learns the
// topology. Blocks until all `size` ranks have arrived (or the start timeout).
Result<RuntimeOptions> tcp_runtime_options(Config config, const TcpWorldConfig& world,
                                           std::vector<std::vector<int>> process_sets = {});

// Convenience: config and world from the process environment.
Result<std::unique_ptr<Runtime>> init_tcp_runtime(std::vector<std::vector<int>> process_sets = {});

}  // namespace korovod
