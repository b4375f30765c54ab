// The members of a process set by host, for hierarchical collectives: `local` = the members on
// this rank's host, `cross` = the member with this rank's local index on every host (hosts
// ordered by their lowest rank). Used by the TCP data plane (shared memory in a host, TCP across)
// and the NCCL one (NCCL in a host, the CPU backend across).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "korovod/transport.h"

namespace korovod {

struct HostGroups {
  std::vector<int> local, cross;  // global ranks
};

// hosts[i]: the host identity of the set's member i (global rank global_ranks[i]); me: this
// rank's index. None when the set is on one host, has one rank per host, or hosts have different
// numbers of ranks (no hierarchy then).
std::optional<HostGroups> host_groups(const std::vector<std::string>& hosts, const std::vector<int>& global_ranks,
                                      int me);

// Collective over the set's control channel: every member's host identity (`mine`, one line), in
// set-rank order, on every member.
Result<std::vector<std::string>> exchange_host_ids(ControlChannel& ctl, const std::string& mine);

}  // namespace korovod
