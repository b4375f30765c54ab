#include "launch/elastic_round.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace korovod::launcher {
namespace {

bool slot_available(const WorkerSlot& w, const std::vector<HostSlots>& hosts) {
  return std::any_of(hosts.begin(), hosts.end(), [&w](const HostSlots& h) { return h.name == w.host && w.slot < h.slots; });
}

// Ranks are the members' positions; the rest follows from the hosts they are on.
void place_members(std::vector<RoundMember>& members) {
  std::vector<std::string> host_order;        // by lowest rank
  std::map<std::string, int> on_host;         // workers per host so far
  for (RoundMember& m : members) {
    if (on_host.count(m.worker.host) == 0) host_order.push_back(m.worker.host);
    m.place.local_rank = on_host[m.worker.host]++;
  }
  // cross_ranks[local_rank][host]: the host's place among the hosts with that local rank.
  std::map<int, std::map<std::string, int>> cross_ranks;
  for (const std::string& host : host_order) {
    for (int local = 0; local < on_host[host]; ++local) {
      auto& at_local = cross_ranks[local];
      at_local[host] = static_cast<int>(at_local.size());
    }
  }
  const int size = static_cast<int>(members.size());
  for (int rank = 0; rank < size; ++rank) {
    SlotAssignment& p = members[static_cast<size_t>(rank)].place;
    p.hostname = members[static_cast<size_t>(rank)].worker.host;
    p.rank = rank;
    p.size = size;
    p.local_size = on_host[p.hostname];
    p.cross_rank = cross_ranks[p.local_rank][p.hostname];
    p.cross_size = static_cast<int>(cross_ranks[p.local_rank].size());
  }
}

}  // namespace

std::string WorkerSlot::id() const { return fmt::format("{}:{}", host, slot); }

std::vector<RoundMember> plan_round(const RoundInputs& in) {
  std::vector<RoundMember> members;
  std::set<WorkerSlot> taken(in.busy.begin(), in.busy.end());
  const auto room = [&in, &members] { return !in.max_np || static_cast<int>(members.size()) < *in.max_np; };
  for (const WorkerSlot& w : in.survivors) {
    if (!slot_available(w, in.hosts) || taken.count(w) != 0 || !room()) continue;
    members.push_back({w, {}, false});
    taken.insert(w);
  }
  const bool add = in.add_new_workers || static_cast<int>(members.size()) < in.min_np;
  for (const HostSlots& h : in.hosts) {
    for (int slot = 0; add && slot < h.slots && room(); ++slot) {
      const WorkerSlot w{h.name, slot};
      if (taken.insert(w).second) members.push_back({w, {}, true});
    }
  }
  place_members(members);
  return members;
}

std::string assignment_value(const SlotAssignment& p) {
  return fmt::format("{} {} {} {} {} {}", p.rank, p.size, p.local_rank, p.local_size, p.cross_rank, p.cross_size);
}

}  // namespace korovod::launcher
