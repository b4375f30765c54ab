#include "core/autotune_search.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "core/check.h"

namespace korovod {
namespace {

template <typename T>
int nearest_log(const std::vector<T>& grid, double value) {
  int best = 0;
  double best_distance = INFINITY;
  const double target = std::log(std::max(value, 1e-9));
  for (size_t i = 0; i < grid.size(); ++i) {
    const double d = std::fabs(std::log(std::max(static_cast<double>(grid[i]), 1e-9)) - target);
    if (d < best_distance) best_distance = d, best = static_cast<int>(i);
  }
  return best;
}

}  // namespace

CoordinateSearch::CoordinateSearch(std::vector<int64_t> fusion_grid, std::vector<double> cycle_grid,
                                   TunedParams start, int max_samples, std::vector<int64_t> chunk_grid)
    : fusion_grid_(std::move(fusion_grid)),
      cycle_grid_(std::move(cycle_grid)),
      chunk_grid_(std::move(chunk_grid)),
      fixed_chunk_(start.chunk_bytes),
      max_samples_(max_samples) {
  KOROVOD_CHECK(!fusion_grid_.empty() && !cycle_grid_.empty());
  current_ = {nearest_log(fusion_grid_, static_cast<double>(start.fusion_threshold_bytes)),
              nearest_log(cycle_grid_, start.cycle_time_ms),
              chunk_grid_.empty() ? 0 : nearest_log(chunk_grid_, static_cast<double>(start.chunk_bytes))};
  best_ = best_at_scan_start_ = current_;
  finished_ = max_samples_ <= 0;
}

TunedParams CoordinateSearch::at(Point p) const {
  return TunedParams{fusion_grid_[static_cast<size_t>(p[0])], cycle_grid_[static_cast<size_t>(p[1])],
                     chunk_grid_.empty() ? fixed_chunk_ : chunk_grid_[static_cast<size_t>(p[2])]};
}

int CoordinateSearch::axis_size(int axis) const {
  const size_t n = axis == 0 ? fusion_grid_.size() : axis == 1 ? cycle_grid_.size() : chunk_grid_.size();
  return static_cast<int>(n);
}

TunedParams CoordinateSearch::current() const { return at(finished_ ? best_ : current_); }

void CoordinateSearch::report(double score) {
  if (finished_) return;
  const bool first = scores_.empty();
  scores_[current_] = score;
  if (first || score > best_score_) best_ = current_, best_score_ = score;
  if (first) {
    best_at_scan_start_ = best_;
    plan_scan();
  }
  advance();
}

void CoordinateSearch::plan_scan() {
  // The first scan of each axis covers the whole axis (the landscape is rarely unimodal: small
  // thresholds lose to per-op overhead, large ones to lost overlap); later scans refine around
  // the best point with its two neighbours on the axis, a hill climb that alternates axes.
  const int n = axis_size(axis_);
  const int here = best_[static_cast<size_t>(axis_)];
  const bool full = scans_planned_ < axes();
  ++scans_planned_;
  for (int i = 0; i < n; ++i) {
    if (!full && std::abs(i - here) != 1) continue;
    Point p = best_;
    p[static_cast<size_t>(axis_)] = i;
    if (!scores_.contains(p)) queue_.push_back(p);
  }
}

void CoordinateSearch::advance() {
  if (samples() >= max_samples_) {
    finished_ = true;
    return;
  }
  while (queue_.empty()) {
    // An axis scan is over. One scan per axis in a row that left the best point in place:
    // converged.
    unchanged_scans_ = best_ == best_at_scan_start_ ? unchanged_scans_ + 1 : 1;
    if (unchanged_scans_ >= axes()) {
      finished_ = true;
      return;
    }
    axis_ = (axis_ + 1) % axes();
    best_at_scan_start_ = best_;
    plan_scan();
  }
  current_ = queue_.front();
  queue_.pop_front();
}

}  // namespace korovod
