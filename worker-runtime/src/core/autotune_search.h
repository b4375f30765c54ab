// The search behind autotune: coordinate descent over a fixed grid of (fusion threshold, cycle
// time). Horovod fits a Gaussian process and picks points by expected improvement; this is the
// simpler, deterministic replacement: scan the whole fusion axis with the cycle time fixed, then
// the whole cycle axis at the best threshold; after that, alternate axes checking only the two
// grid neighbours of the best point. Converged when two scans in a row (one per axis) leave the
// best point in place: no grid neighbour along either axis is better. It also stops when the
// sample budget is spent. A point is never measured twice, so the same scores always give the
// same sequence. Pure: scores come in from outside, nothing here reads a clock.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <utility>
#include <vector>

namespace korovod {

struct TunedParams {
  int64_t fusion_threshold_bytes = 0;
  double cycle_time_ms = 0;
  bool operator==(const TunedParams&) const = default;
};

class CoordinateSearch {
 public:
  // Grids must be non-empty; `start` is snapped to the nearest grid point (log scale).
  CoordinateSearch(std::vector<int64_t> fusion_grid, std::vector<double> cycle_grid, TunedParams start,
                   int max_samples);

  // The point to measure next; once finished(), the best point found.
  TunedParams current() const;
  // The score of current() (higher is better); moves on to the next unmeasured point.
  void report(double score);
  bool finished() const { return finished_; }
  TunedParams best() const { return at(best_); }
  double best_score() const { return best_score_; }
  int samples() const { return static_cast<int>(scores_.size()); }

 private:
  using Point = std::pair<int, int>;  // (fusion index, cycle index)
  TunedParams at(Point p) const;
  void plan_scan();  // queue the unmeasured points on the current axis through best_
  void advance();    // next point to measure, or finish

  std::vector<int64_t> fusion_grid_;
  std::vector<double> cycle_grid_;
  int max_samples_;
  std::map<Point, double> scores_;
  std::deque<Point> queue_;
  Point current_;
  Point best_;
  double best_score_ = 0;
  int axis_ = 0;                // 0: fusion threshold, 1: cycle time
  Point best_at_scan_start_;
  int unchanged_scans_ = 0;     // consecutive axis scans that left best_ in place
  int scans_planned_ = 0;       // the first two are whole-axis scans
  bool finished_ = false;
};

}  // namespace korovod
