// Elastic host discovery, as horovodrun's --host-discovery-script (runner/elastic/discovery.py):
// the script prints one `host:slots` or `host` (then --slots-per-host) line per available host;
// korovodrun runs it every second and compares what it printed with the hosts it had.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "launch/hosts.h"
#include "korovod/status.h"

namespace korovod::launcher {

// The script's stdout as hosts, in the order printed. Blank lines are skipped (a script prints
// nothing while no worker is ready); a host printed twice keeps its first line's place and its
// last line's slots. An error names the line.
Result<std::vector<HostSlots>> parse_discovery_output(const std::string& text, int default_slots);

// Bits of a change in the host set, as the contract's elastic/hosts_kind (Horovod's
// HostUpdateResult): a new host or more slots on one is an addition, a host gone or fewer slots
// a removal.
enum HostChange : unsigned { kHostsUnchanged = 0, kHostsAdded = 1, kHostsRemoved = 2 };
unsigned compare_hosts(const std::vector<HostSlots>& before, const std::vector<HostSlots>& now);

// `now` reordered so hosts known before keep their relative order and new hosts follow in the
// order discovered: the oldest hosts get the lowest ranks (Horovod's order_available_hosts).
std::vector<HostSlots> keep_host_order(const std::vector<HostSlots>& before, const std::vector<HostSlots>& now);

class HostDiscovery {
 public:
  virtual ~HostDiscovery() = default;
  virtual Result<std::vector<HostSlots>> discover() = 0;
};

}  // namespace korovod::launcher
