#include "launch/host_blacklist.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace korovod::launcher {

namespace {
constexpr int kLowestCooldownSeconds = 1;      // Horovod's DEFAULT_COOLDOWN_LOWER_LIMIT_SECONDS
constexpr int kHighestCooldownSeconds = 3600;  // DEFAULT_COOLDOWN_UPPER_LIMIT_SECONDS
}  // namespace

Status check_cooldown_range(const CooldownRange& r) {
  if (r.min_seconds < kLowestCooldownSeconds) {
    return Status::invalid_argument(fmt::format("--blacklist-cooldown-range: MIN {} is below the lowest allowed, {} s",
                                                r.min_seconds, kLowestCooldownSeconds));
  }
  if (r.max_seconds > kHighestCooldownSeconds) {
    return Status::invalid_argument(fmt::format("--blacklist-cooldown-range: MAX {} is above the highest allowed, {} s",
                                                r.max_seconds, kHighestCooldownSeconds));
  }
  if (r.min_seconds > r.max_seconds) {
    return Status::invalid_argument(
        fmt::format("--blacklist-cooldown-range: MIN {} is above MAX {}", r.min_seconds, r.max_seconds));
  }
  return Status::ok();
}

HostBlacklist::HostBlacklist(int failures_to_blacklist, std::optional<CooldownRange> cooldown, Uniform uniform)
    : failures_to_blacklist_(std::max(1, failures_to_blacklist)), cooldown_(cooldown), uniform_(std::move(uniform)) {}

std::chrono::milliseconds HostBlacklist::cooldown_for(int times_blacklisted) {
  const double low = cooldown_->min_seconds;
  const double delay = low * std::ldexp(1.0, std::min(times_blacklisted, 30)) + uniform_() * low;
  const double seconds = std::clamp(delay, low, static_cast<double>(cooldown_->max_seconds));
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

bool HostBlacklist::record_failure(const WorkerSlot& worker, Clock::time_point now) {
  Host& h = hosts_[worker.host];
  if (is_blacklisted(worker.host, now)) return false;  // a late exit of a worker dropped with its host
  if (++h.failures_in_a_row[worker.slot] < failures_to_blacklist_) return false;
  h.blacklisted = true;
  h.failures_in_a_row.clear();
  ++h.times_blacklisted;
  if (cooldown_) {
    h.cooldown_end = now + cooldown_for(h.times_blacklisted);
  } else {
    h.cooldown_end.reset();
  }
  return true;
}

void HostBlacklist::record_ready(const WorkerSlot& worker) {
  auto it = hosts_.find(worker.host);
  if (it != hosts_.end()) it->second.failures_in_a_row.erase(worker.slot);
}

bool HostBlacklist::is_blacklisted(const std::string& host, Clock::time_point now) const {
  auto it = hosts_.find(host);
  if (it == hosts_.end() || !it->second.blacklisted) return false;
  return !it->second.cooldown_end || now < *it->second.cooldown_end;
}

std::vector<std::string> HostBlacklist::take_resurrected(Clock::time_point now) {
  std::vector<std::string> back;
  for (auto& [name, h] : hosts_) {
    if (h.blacklisted && h.cooldown_end && now >= *h.cooldown_end) {
      h.blacklisted = false;
      h.cooldown_end.reset();
      h.failures_in_a_row.clear();
      back.push_back(name);
    }
  }
  return back;
}

std::optional<HostBlacklist::Clock::time_point> HostBlacklist::next_cooldown_end() const {
  std::optional<Clock::time_point> next;
  for (const auto& [name, h] : hosts_) {
    if (h.blacklisted && h.cooldown_end && (!next || *h.cooldown_end < *next)) next = h.cooldown_end;
  }
  return next;
}

}  // namespace korovod::launcher
