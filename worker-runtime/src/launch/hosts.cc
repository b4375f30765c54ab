#include "launch/hosts.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <sstream>

namespace korovod::launcher {
namespace {

bool valid_host_name(const std::string& name) {
  if (name.empty()) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

Result<int> parse_slots(const std::string& text) {
  int slots = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), slots);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || slots < 1) {
    return Status::invalid_argument(fmt::format("slots {:?}: expected a number >= 1", text));
  }
  return slots;
}

// "host:N" -> HostSlots; `where` prefixes errors.
Result<HostSlots> parse_host_colon_slots(const std::string& entry, const std::string& where) {
  const size_t colon = entry.rfind(':');
  if (colon == std::string::npos) {
    return Status::invalid_argument(fmt::format("{}{:?}: expected host:slots (e.g. worker-0:2)", where, entry));
  }
  HostSlots h{entry.substr(0, colon), 0};
  if (!valid_host_name(h.name)) {
    return Status::invalid_argument(fmt::format("{}{:?}: {:?} is not a host name", where, entry, h.name));
  }
  Result<int> slots = parse_slots(entry.substr(colon + 1));
  if (!slots.is_ok()) return Status::invalid_argument(fmt::format("{}{:?}: {}", where, entry, slots.status().message()));
  h.slots = *slots;
  return h;
}

Status check_unique(const std::vector<HostSlots>& hosts, const std::string& where) {
  std::set<std::string> seen;
  for (const HostSlots& h : hosts) {
    if (!seen.insert(h.name).second) {
      return Status::invalid_argument(fmt::format("{}host {:?} is listed twice (give it all its slots once)", where, h.name));
    }
  }
  return Status::ok();
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

// One hostfile line without its comment, trimmed and non-empty.
Result<HostSlots> parse_hostfile_line(const std::string& line, const std::string& where) {
  std::istringstream words(line);
  std::string first, word;
  words >> first;
  if (first.find(':') != std::string::npos) {
    if (words >> word) return Status::invalid_argument(fmt::format("{}{:?}: unexpected {:?} after host:slots", where, line, word));
    return parse_host_colon_slots(first, where);
  }
  HostSlots h{first, 0};
  if (!valid_host_name(h.name)) return Status::invalid_argument(fmt::format("{}{:?} is not a host name", where, h.name));
  while (words >> word) {
    if (word.rfind("slots=", 0) != 0) continue;  // max_slots=... and others: Open MPI's, not ours
    Result<int> slots = parse_slots(word.substr(6));
    if (!slots.is_ok()) return Status::invalid_argument(fmt::format("{}{}", where, slots.status().message()));
    h.slots = *slots;
  }
  if (h.slots == 0) {
    return Status::invalid_argument(fmt::format("{}{:?}: expected 'host slots=N' or 'host:N'", where, line));
  }
  return h;
}

}  // namespace

Result<std::vector<HostSlots>> parse_hosts(const std::string& spec) {
  std::vector<HostSlots> hosts;
  std::istringstream entries(spec);
  std::string entry;
  while (std::getline(entries, entry, ',')) {
    Result<HostSlots> h = parse_host_colon_slots(trim(entry), "-H: ");
    if (!h.is_ok()) return h.status();
    hosts.push_back(*h);
  }
  if (hosts.empty()) return Status::invalid_argument("-H: no hosts given (expected host:slots,...)");
  KOROVOD_RETURN_IF_ERROR(check_unique(hosts, "-H: "));
  return hosts;
}

Result<std::vector<HostSlots>> parse_hostfile(const std::string& text, const std::string& source) {
  std::vector<HostSlots> hosts;
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    Result<HostSlots> h = parse_hostfile_line(line, fmt::format("{} line {}: ", source, number));
    if (!h.is_ok()) return h.status();
    hosts.push_back(*h);
  }
  if (hosts.empty()) return Status::invalid_argument(fmt::format("{}: no hosts in it", source));
  KOROVOD_RETURN_IF_ERROR(check_unique(hosts, source + ": "));
  return hosts;
}

std::string hosts_to_string(const std::vector<HostSlots>& hosts) {
  std::string out;
  for (const HostSlots& h : hosts) out += fmt::format("{}{}:{}", out.empty() ? "" : ",", h.name, h.slots);
  return out;
}

Result<std::vector<SlotAssignment>> assign_slots(const std::vector<HostSlots>& hosts, int num_proc) {
  int64_t total = 0;  // int64: slots of several hosts may add up past INT_MAX
  for (const HostSlots& h : hosts) total += h.slots;
  if (num_proc < 1) return Status::invalid_argument(fmt::format("-np {}: expected at least 1 process", num_proc));
  if (num_proc > total) {
    return Status::invalid_argument(fmt::format("-np {} is more than the {} slots of the hosts ({})", num_proc, total,
                                                hosts_to_string(hosts)));
  }
  std::vector<SlotAssignment> out;
  std::map<int, int> hosts_with_local_rank;  // local rank -> hosts that have it so far
  for (const HostSlots& h : hosts) {
    const int first = static_cast<int>(out.size());
    const int on_host = std::min(h.slots, num_proc - first);
    for (int local = 0; local < on_host; ++local) {
      SlotAssignment s;
      s.hostname = h.name;
      s.rank = first + local;
      s.size = num_proc;
      s.local_rank = local;
      s.local_size = on_host;
      s.cross_rank = hosts_with_local_rank[local]++;
      out.push_back(s);
    }
  }
  for (SlotAssignment& s : out) s.cross_size = hosts_with_local_rank[s.local_rank];
  return out;
}

}  // namespace korovod::launcher
