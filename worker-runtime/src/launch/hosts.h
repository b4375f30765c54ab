// Hosts and slots as horovodrun reads them (-H host:slots,... or a hostfile), and the rank
// assignment it makes from them (horovod/runner/common/util/hosts.py: get_host_assignments).
#pragma once

#include <string>
#include <vector>

#include "korovod/status.h"

namespace korovod::launcher {

struct HostSlots {
  std::string name;
  int slots = 0;
};

// One rank's place: what horovodrun's gloo path exports as HOROVOD_{HOSTNAME,RANK,...}.
struct SlotAssignment {
  std::string hostname;
  int rank = 0, size = 0;
  int local_rank = 0, local_size = 0;
  int cross_rank = 0, cross_size = 0;
};

// "host:slots,host2:slots". Every entry needs its slot count (as horovodrun: no bare names),
// slots >= 1, no host twice; an error names the entry.
Result<std::vector<HostSlots>> parse_hosts(const std::string& spec);

// A hostfile's text: `host slots=N` (further key=value words such as max_slots are ignored) or
// `host:N` per line; `#` starts a comment, blank lines are skipped. `source` names the file in
// errors, with the line number.
Result<std::vector<HostSlots>> parse_hostfile(const std::string& text, const std::string& source);

// Back to -H form ("a:2,b:2"), as horovodrun hands a hostfile to mpirun.
std::string hosts_to_string(const std::vector<HostSlots>& hosts);

// Ranks 0..num_proc-1 in host order, slot by slot; hosts left without a rank get none. Local rank
// = position on the host; cross rank = position of the host among the hosts that have a rank
// with this local rank. More ranks than slots is an error naming both numbers.
Result<std::vector<SlotAssignment>> assign_slots(const std::vector<HostSlots>& hosts, int num_proc);

}  // namespace korovod::launcher
