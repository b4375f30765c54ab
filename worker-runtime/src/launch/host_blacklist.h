// Which hosts an elastic job stops using because their workers keep failing (Horovod's
// HostState / HostManager.blacklist, runner/elastic/discovery.py). Horovod blacklists a host at
// its first failure; korovodrun when one of its worker slots has failed `failures_to_blacklist`
// times in a row, a row being ended by that slot's worker completing a round's init (so one
// machine survives killed workers, while a slot whose workers crash before they ever start
// training takes its host out).
// Without a cooldown range the blacklist is permanent; with one (--blacklist-cooldown-range MIN
// MAX) the host comes back after MIN * 2^n + U(0,1) * MIN seconds (n = times blacklisted so
// far, counting this one), clamped to [MIN, MAX], as Horovod's _set_cooldown_period.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "launch/elastic_round.h"
#include "korovod/status.h"

namespace korovod::launcher {

struct CooldownRange {
  int min_seconds = 0, max_seconds = 0;
};
// Horovod's limits: MIN >= 1, MAX <= 3600 (and MIN <= MAX). The error names the bad bound.
Status check_cooldown_range(const CooldownRange& range);

class HostBlacklist {
 public:
  using Clock = std::chrono::steady_clock;
  using Uniform = std::function<double()>;  // a number in [0, 1)

  HostBlacklist(int failures_to_blacklist, std::optional<CooldownRange> cooldown, Uniform uniform);

  // The worker failed. Returns true when this failure blacklisted its host.
  bool record_failure(const WorkerSlot& worker, Clock::time_point now);
  // The worker completed a round's init: its slot's row of failures ends.
  void record_ready(const WorkerSlot& worker);
  // Blacklisted and its cooldown (if any) not yet over.
  bool is_blacklisted(const std::string& host, Clock::time_point now) const;
  // Hosts whose cooldown ended since the last call: they are available again (a discovery
  // "addition" in Horovod: is_resurrected), with their failures forgotten.
  std::vector<std::string> take_resurrected(Clock::time_point now);
  // When the next cooldown ends (for the driver's wake-up), if one is running.
  std::optional<Clock::time_point> next_cooldown_end() const;

 private:
  struct Host {
    std::map<int, int> failures_in_a_row;  // by slot
    int times_blacklisted = 0;
    bool blacklisted = false;
    std::optional<Clock::time_point> cooldown_end;  // none while blacklisted: for good
  };
  std::chrono::milliseconds cooldown_for(int times_blacklisted);

  int failures_to_blacklist_;
  std::optional<CooldownRange> cooldown_;
  Uniform uniform_;
  std::map<std::string, Host> hosts_;
};

}  // namespace korovod::launcher
