// Building a Runtime without MPI: ranks meet at a rendezvous store that rank 0 hosts, the
// control plane (negotiation) and the CPU data plane run over TCP sockets (shared memory between
// ranks of one host unless KOROVOD_CPU_OPERATIONS=tcp). Environment, as a launcher sets it
// (names and defaults: docs/runtime-config.md):
//   KOROVOD_RENDEZVOUS_ADDR, KOROVOD_RENDEZVOUS_PORT  (HOROVOD_GLOO_RENDEZVOUS_ADDR / _PORT)
//   KOROVOD_RANK, KOROVOD_SIZE                        (HOROVOD_RANK / HOROVOD_SIZE)
//   KOROVOD_HOST_ID     optional host identity (default: hostname + boot id); ranks with the
//                       same identity are one host (local rank/size, cross rank/size)
//   KOROVOD_START_TIMEOUT  seconds to wait for every rank at the store (HOROVOD_START_TIMEOUT, 30)
//   KOROVOD_RENDEZVOUS_SERVER  "rank0" (default: rank 0 hosts the store) or "external" (a
//                       launcher such as korovodrun hosts it for the whole job)
//   KOROVOD_JOB_SECRET_FILE  a file holding the job's secret (the operator mounts one): every TCP
//                       connection of the job proves it before anything else is read
//   KOROVOD_JOB_SECRET  the secret itself (korovodrun gives it to the ranks it starts); wins over
//                       the file. Neither set: no authentication, and rank 0 warns.
//   KOROVOD_HOSTNAME    the name errors give this rank's host ("rank 2 on host worker-1");
//                       default: gethostname()
// Elastic mode (docs/elastic.md), KOROVOD_ELASTIC=1 / HOROVOD_ELASTIC=1: no KOROVOD_RANK/SIZE;
// the driver hosts the store and assigns rank, size, local and cross ranks per round:
//   KOROVOD_ELASTIC_WORKER_ID  this process's stable id at the driver ("host:slot"; required)
//   KOROVOD_ELASTIC_TIMEOUT    seconds an init waits for a round that takes this worker (600)
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "korovod/runtime.h"

namespace korovod {

// Who hosts the rendezvous store.
enum class RendezvousServer { kRank0, kExternal };

struct TcpWorldConfig {
  std::string rendezvous_addr;  // numeric IPv4 or a host name
  int rendezvous_port = 0;      // with kRank0 and port 0, rank 0 listens on an ephemeral port
  int rank = -1, size = 0;
  std::string host_id;                // "" = Config::host_id (KOROVOD_HOST_ID), else hostname + boot id (Env::host)
  double start_timeout_seconds = 30;  // every rank at the store, every connection made
  RendezvousServer server = RendezvousServer::kRank0;
  std::string server_listen_host = "0.0.0.0";  // where rank 0's store listens (kRank0)
  // What every connection must prove (transport/tcp/auth.h); "" = connections unauthenticated.
  std::string job_secret;
  std::string hostname;  // "" = Config::hostname (KOROVOD_HOSTNAME), else gethostname(); names this rank's host in errors
  // Elastic: rank and size come from the driver's round (rank/size above are unused); the store
  // is the driver's (server = kExternal).
  bool elastic = false;
  std::string elastic_worker_id;
  double elastic_timeout_seconds = 600;
};

// KOROVOD_ELASTIC / HOROVOD_ELASTIC is set to a true value (1, true, yes, on).
bool elastic_mode(const EnvMap& env);

// Elastic mode: the driver's host-change counter and kind (elastic/hosts_version,
// elastic/hosts_kind; 0 and 0 while unset), read over a connection of its own to the store the
// environment names. A PreconditionError when the environment is not elastic.
struct ElasticHostsUpdate {
  uint64_t version = 0;
  uint32_t kind = 0;  // bitmask: 1 hosts added, 2 hosts removed
};
Result<ElasticHostsUpdate> read_elastic_hosts_version(const EnvMap& env);
// The same for elastic/round, the driver's newest published round (0 while unset).
Result<int64_t> read_elastic_published_round(const EnvMap& env);

// Reads the variables above from `env` (and the secret file it names); a missing or malformed
// one is an InvalidArgument error naming it (never showing a secret).
Result<TcpWorldConfig> parse_tcp_world(const EnvMap& env);
bool tcp_rendezvous_configured(const EnvMap& env);  // KOROVOD_/HOROVOD_GLOO_RENDEZVOUS_ADDR set

// Rank 0 starts the store (unless it is external); every rank connects, publishes its host
// identity and learns the topology. Blocks until all `size` ranks have arrived (or the start
// timeout). A process may start several runtimes one after another against the same store:
// keys carry the rank's start count (elastic: the round), so a later start never reads an earlier one's keys.
// `env` (null = SystemEnv) gives the host identity and hostname the world leaves "" and becomes
// RuntimeOptions::env.
Result<RuntimeOptions> tcp_runtime_options(Config config, const TcpWorldConfig& world,
                                           std::vector<std::vector<int>> process_sets = {},
                                           std::shared_ptr<Env> env = nullptr);

// tcp_runtime_options, then Runtime::create; in elastic mode, then marks this worker ready for
// its round (elastic/<round>/ready/<worker_id>).
Result<std::unique_ptr<Runtime>> start_tcp_runtime(Config config, const TcpWorldConfig& world,
                                                   std::vector<std::vector<int>> process_sets = {});

// Convenience: config and world from the process environment.
Result<std::unique_ptr<Runtime>> init_tcp_runtime(std::vector<std::vector<int>> process_sets = {});

// The job's rendezvous store, hosted by a process that starts the ranks itself (korovodrun does;
// a Python driver such as korovod.spark's through the C ABI, korovod_rendezvous_start): ranks
// started with KOROVOD_RENDEZVOUS_SERVER=external, this address and port, and the same job
// secret meet there. It serves on a thread of its own until destroyed, which closes every
// connection.
class RendezvousHost {
 public:
  virtual ~RendezvousHost() = default;
  virtual int port() const = 0;  // the port it listens on (the ephemeral one when 0 was asked)
};
// Listens on `listen_host` (a numeric IPv4 address; "0.0.0.0": every interface) and `port` (0:
// an ephemeral port). `job_secret` is required, at least 16 bytes (kInvalidArgument otherwise,
// never showing it): a store reachable from a cluster's network is never left open. Refused
// connections are reported to `log` (null: stderr, "korovod: rendezvous store on port P: closed the
// connection from A:P: ...") with their address.
Result<std::unique_ptr<RendezvousHost>> host_rendezvous(const std::string& listen_host, int port,
                                                        const std::string& job_secret,
                                                        std::function<void(const std::string&)> log = nullptr);

// A world of one rank in this process, for a job started with no launcher at all (`python
// train.py`): the same engine and data planes, with the store and every socket on 127.0.0.1
// (ephemeral ports), so it needs neither MPI nor a network. Config from the environment.
Result<std::unique_ptr<Runtime>> init_solo_runtime(std::vector<std::vector<int>> process_sets = {});

}  // namespace korovod
