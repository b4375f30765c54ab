// Stall inspector (coordinator side): names tensors some ranks submitted and others did not.
// After the warning time it logs which ranks are missing which tensors; after the shutdown time
// (if > 0) those tensors fail with an error instead of hanging.
#pragma once

#include <string>
#include <vector>

#include "core/logger.h"
#include "korovod/clock.h"

namespace korovod {

struct StallOptions {
  bool enabled = true;
  double warning_seconds = 60.0;
  double shutdown_seconds = 0.0;
};

struct PendingTensor {
  std::string name;
  Clock::TimePoint first_seen;
  std::vector<int> missing_global_ranks;
};

class StallInspector {
 public:
  StallInspector(StallOptions options, const Clock& clock, const Logger& log)
      : options_(options), clock_(clock), log_(log), last_warning_(clock.now()) {}

  // Logs a warning (at most once per warning period); returns the names to fail now, each with
  // its error message.
  std::vector<std::pair<std::string, std::string>> inspect(const std::vector<PendingTensor>& pending);
  // Whether a cached tensor waiting this long should be pushed back through the coordinator.
  bool should_uncache(Clock::TimePoint first_seen) const;

 private:
  double age(Clock::TimePoint t) const;
  StallOptions options_;
  const Clock& clock_;
  const Logger& log_;
  Clock::TimePoint last_warning_;
};

}  // namespace korovod
