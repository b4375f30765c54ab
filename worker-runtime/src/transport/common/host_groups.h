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

// Collective over a set's control channel: every member's line (`mine`; newlines become spaces),
// in set-rank order, on every member. Providers exchange host identities, addresses and segment
// names with it at set creation.
Result<std::vector<std::string>> allgather_lines(ControlChannel& ctl, const std::string& mine);

// One step of a provider's setup that may fail on some member: every member reports its status
// (and `payload` when ok) and all get the same outcome, so no member is left waiting in a later
// collective: everyone's payload in set-rank order, or "<what> failed on rank <global rank>:
// <why>" for the first member that failed.
Result<std::vector<std::string>> agree(ControlChannel& ctl, const Status& mine, const std::string& payload,
                                       const std::string& what, const std::vector<int>& global_ranks);

}  // namespace korovod
