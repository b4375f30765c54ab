// Who is in an elastic round and with which rank: a pure function of the previous round, the
// hosts available now and the limits (docs/korovodrun.md, "Elastic"). Workers are named
// `<host>:<slot>` (the contract's KOROVOD_ELASTIC_WORKER_ID).
//
// Survivors come first, in their previous rank order: rank 0 stays rank 0 while it lives (the
// training state is broadcast from rank 0 after a reset), and a survivor keeps its rank exactly
// when no worker ranked below it left. New workers follow, host by host in host order, slot by
// slot, up to --max-np. local/cross ranks follow from the ranks: local rank = place among the
// round's workers on the same host (by rank); cross rank = place of the host among the hosts
// that have that local rank (hosts ordered by their lowest rank), as Horovod's
// get_host_assignments.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "launch/hosts.h"

namespace korovod::launcher {

struct WorkerSlot {
  std::string host;
  int slot = 0;
  std::string id() const;  // "<host>:<slot>"
  bool operator==(const WorkerSlot&) const = default;
  auto operator<=>(const WorkerSlot&) const = default;
};

struct RoundMember {
  WorkerSlot worker;
  SlotAssignment place;  // place.hostname == worker.host
  bool is_new = false;   // no process for it yet: the driver starts one
};

struct RoundInputs {
  std::vector<WorkerSlot> survivors;   // alive workers of the previous round, by their rank there
  std::vector<HostSlots> hosts;        // available now (no blacklisted host), in host order
  std::set<WorkerSlot> busy;           // slots whose old process still runs outside the round
  bool add_new_workers = true;         // false: survivors only (unless that is below min_np)
  int min_np = 1;
  std::optional<int> max_np;
};

// The round's members by rank (empty when no slot is available). A survivor whose slot is no
// longer available (its host gone, or fewer slots) is left out. Below min_np is the caller's
// decision (the round is returned as planned).
std::vector<RoundMember> plan_round(const RoundInputs& inputs);

// The contract's assignment value: "rank size local_rank local_size cross_rank cross_size".
std::string assignment_value(const SlotAssignment& place);

}  // namespace korovod::launcher
