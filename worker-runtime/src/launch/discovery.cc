#include "launch/discovery.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>


namespace korovod::launcher {
namespace {

std::string trimmed(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

}  // namespace

Result<std::vector<HostSlots>> parse_discovery_output(const std::string& text, int default_slots) {
  std::vector<HostSlots> hosts;
  std::istringstream lines(text);
  int number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    line = trimmed(line);
    if (line.empty()) continue;
    // parse_hosts checks the name and the slots as -H does; a bare host gets the default.
    const std::string entry = line.find(':') == std::string::npos ? fmt::format("{}:{}", line, default_slots) : line;
    Result<std::vector<HostSlots>> parsed = parse_hosts(entry);
    if (!parsed.is_ok() || parsed->size() != 1) {
      const std::string why = parsed.is_ok() ? "expected one host:slots" : parsed.status().message();
      return Status::invalid_argument(fmt::format("host discovery line {} {:?}: {}", number, line, why));
    }
    const HostSlots& h = parsed->front();
    auto known = std::find_if(hosts.begin(), hosts.end(), [&h](const HostSlots& k) { return k.name == h.name; });
    if (known != hosts.end()) {
      known->slots = h.slots;
    } else {
      hosts.push_back(h);
    }
  }
  return hosts;
}

unsigned compare_hosts(const std::vector<HostSlots>& before, const std::vector<HostSlots>& now) {
  std::map<std::string, int> old_slots;
  for (const HostSlots& h : before) old_slots[h.name] = h.slots;
  unsigned change = kHostsUnchanged;
  for (const HostSlots& h : now) {
    auto it = old_slots.find(h.name);
    if (it == old_slots.end() || h.slots > it->second) change |= kHostsAdded;
    if (it != old_slots.end() && h.slots < it->second) change |= kHostsRemoved;
    if (it != old_slots.end()) old_slots.erase(it);
  }
  if (!old_slots.empty()) change |= kHostsRemoved;
  return change;
}

std::vector<HostSlots> keep_host_order(const std::vector<HostSlots>& before, const std::vector<HostSlots>& now) {
  std::vector<HostSlots> ordered;
  std::set<std::string> placed;
  for (const HostSlots& old : before) {
    auto it = std::find_if(now.begin(), now.end(), [&old](const HostSlots& h) { return h.name == old.name; });
    if (it != now.end()) {
      ordered.push_back(*it);
      placed.insert(it->name);
    }
  }
  for (const HostSlots& h : now) {
    if (placed.count(h.name) == 0) ordered.push_back(h);
  }
  return ordered;
}

}  // namespace korovod::launcher
