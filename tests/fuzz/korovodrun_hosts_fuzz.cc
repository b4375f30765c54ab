// korovodrun's host list (-H host:slots,...) and hostfile parsing, and the rank assignment made
// from them (worker-runtime/tools/korovodrun/hosts.cc).
//
// Invariants, for any text:
//  - parse_hosts and parse_hostfile never crash (no overflow however large the slot counts);
//  - what parses prints back (hosts_to_string, the -H form handed to mpirun) to text that
//    parses to the same hosts, and printing that again gives the same text;
//  - assign_slots gives ranks 0..np-1 in host order, local ranks 0..local_size-1 per host,
//    cross ranks that count hosts per local rank, and refuses np beyond the slots.
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "launch/hosts.h"

namespace {

using namespace korovod::launcher;

bool same(const std::vector<HostSlots>& a, const std::vector<HostSlots>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const HostSlots& x, const HostSlots& y) { return x.name == y.name && x.slots == y.slots; });
}

void check_round_trip(const std::vector<HostSlots>& hosts, const std::string& text) {
  const std::string printed = hosts_to_string(hosts);
  const auto again = parse_hosts(printed);
  FUZZ_CHECK(again.is_ok(), "printed hosts do not parse: " + printed + " (" + again.status().message() +
                                ") from " + fuzz::excerpt(text));
  FUZZ_CHECK(same(*again, hosts), "hosts changed through " + printed);
  FUZZ_CHECK(hosts_to_string(*again) == printed, printed);
}

void check_assignment(const std::vector<HostSlots>& hosts, int np) {
  int64_t total = 0;
  for (const auto& h : hosts) total += h.slots;
  const auto a = assign_slots(hosts, np);
  if (np < 1 || np > total) {
    FUZZ_CHECK(!a.is_ok(), "assign_slots accepted -np " + std::to_string(np));
    return;
  }
  FUZZ_CHECK(a.is_ok(), "assign_slots refused -np " + std::to_string(np) + ": " + a.status().message());
  FUZZ_CHECK(a->size() == static_cast<size_t>(np), "not one slot per rank");
  std::map<int, int> hosts_with_local_rank;
  size_t host = 0;
  for (int rank = 0; rank < np; ++rank) {
    const SlotAssignment& s = (*a)[rank];
    FUZZ_CHECK(s.rank == rank && s.size == np, "ranks out of order");
    if (rank > 0 && s.local_rank == 0) ++host;
    FUZZ_CHECK(host < hosts.size() && s.hostname == hosts[host].name, "rank on the wrong host");
    FUZZ_CHECK(s.local_rank < s.local_size && s.local_size <= hosts[host].slots, "local rank");
    FUZZ_CHECK(s.cross_rank == hosts_with_local_rank[s.local_rank]++, "cross rank");
  }
  for (const auto& s : *a) FUZZ_CHECK(s.cross_size == hosts_with_local_rank[s.local_rank], "cross size");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // The first byte picks the -np to assign; the rest is the text.
  const int np_pick = data[0];
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  for (const auto& parsed : {parse_hosts(text), parse_hostfile(text, "hostfile")}) {
    if (!parsed.is_ok()) continue;
    check_round_trip(*parsed, text);
    int64_t total = 0;
    for (const auto& h : *parsed) total += h.slots;
    // Small -np always; around the total too when it is small enough to assign cheaply.
    check_assignment(*parsed, np_pick % 16);
    if (total <= 4096) {
      check_assignment(*parsed, static_cast<int>(total));
      check_assignment(*parsed, static_cast<int>(total) + 1);
    }
  }
  return 0;
}
