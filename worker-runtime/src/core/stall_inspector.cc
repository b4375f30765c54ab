#include "core/stall_inspector.h"

#include <fmt/format.h>

#include "core/response_builder.h"

namespace korovod {

double StallInspector::age(Clock::TimePoint t) const {
  return std::chrono::duration<double>(clock_.now() - t).count();
}

bool StallInspector::should_uncache(Clock::TimePoint first_seen) const {
  if (!options_.enabled) return false;
  double limit = options_.warning_seconds;
  if (options_.shutdown_seconds > 0 && options_.shutdown_seconds < limit) limit = options_.shutdown_seconds;
  return age(first_seen) > limit / 2;
}

std::vector<std::pair<std::string, std::string>> StallInspector::inspect(
    const std::vector<PendingTensor>& pending) {
  std::vector<std::pair<std::string, std::string>> failed;
  if (!options_.enabled) return failed;
  std::string warning;
  for (const auto& t : pending) {
    double waited = age(t.first_seen);
    if (options_.shutdown_seconds > 0 && waited > options_.shutdown_seconds) {
      failed.emplace_back(t.name, fmt::format(
          "Tensor '{}' stalled: {} did not submit it within {} s (stall shutdown time); failing "
          "the operation instead of hanging.", t.name, rank_list(t.missing_global_ranks),
          options_.shutdown_seconds));
    } else if (waited > options_.warning_seconds) {
      warning += fmt::format("\n  {}: missing {}", t.name, rank_list(t.missing_global_ranks));
    }
  }
  if (!warning.empty() && age(last_warning_) > options_.warning_seconds) {
    last_warning_ = clock_.now();
    log_.log(LogLevel::kWarning,
             "One or more tensors were submitted to be reduced, gathered or broadcasted by a subset "
             "of ranks and are waiting for the remainder for more than {} s:{}",
             options_.warning_seconds, warning);
  }
  return failed;
}

}  // namespace korovod
