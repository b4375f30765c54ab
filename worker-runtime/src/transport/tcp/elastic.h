// Elastic membership at the rendezvous store (docs/elastic.md, "Runtime"). The driver
// (korovodrun --min-np/--max-np/--host-discovery-script) owns membership: it publishes rounds,
// each with an assignment per worker, and the runtime of each worker process joins one round
// per init. Keys (values ASCII):
//   elastic/round                       latest published round r (the driver; only increases)
//   elastic/<r>/assign/<worker_id>      "rank size local_rank local_size cross_rank cross_size"
//                                       or "removed" (the driver, before it sets elastic/round)
//   elastic/<r>/ready/<worker_id>       "1" once this worker's init for round r completed (here)
//   elastic/attempted/<worker_id>       the last round this worker started an init for (here):
//                                       a later init of the same worker waits for a newer round
//   elastic/hosts_version, _kind        the driver's host-change counter and its kind bitmask
// The rendezvous of round r itself runs under keys prefixed "r<r>/".
#pragma once

#include <cstdint>
#include <string>

#include "korovod/tcp.h"
#include "korovod/transport.h"
#include "transport/tcp/store.h"

namespace korovod::tcp {

struct ElasticRound {
  int64_t round = 0;
  WorldInfo world;  // the driver's assignment for this worker
};

// "rank size local_rank local_size cross_rank cross_size", each in range; anything else is an
// InvalidArgument error quoting the text and `key`.
Result<WorldInfo> parse_elastic_assignment(const std::string& text, const std::string& key);

// An integer key's value without waiting (0 when absent).
Result<int64_t> read_counter(StoreClient& store, const std::string& key);

// The round this worker's next init joins: the newest published round, once it is newer than the
// last round this worker attempted and assigns this worker (polling elastic/round until
// `timeout_seconds`). Records the attempt (also when the answer is "removed", so the next init
// waits for a newer round) before returning. "removed" is a PreconditionError;
// running out of time an Aborted error naming the round waited for.
Result<ElasticRound> join_elastic_round(StoreClient& store, const std::string& worker_id, double timeout_seconds);

// elastic/<r>/ready/<worker_id> = "1".
Status mark_elastic_ready(StoreClient& store, int64_t round, const std::string& worker_id);

struct HostsVersion {
  uint64_t version = 0;
  uint32_t kind = 0;  // 1 hosts added, 2 hosts removed, 3 both
};
Result<HostsVersion> read_hosts_version(StoreClient& store);
// The same over a connection of its own to the store `world` names (proving its job secret).
Result<HostsVersion> read_hosts_version_at(const TcpWorldConfig& world);
// elastic/round (0 while unset) over a connection of its own.
Result<int64_t> read_published_round_at(const TcpWorldConfig& world);

}  // namespace korovod::tcp
