// The search behind autotune: coordinate descent over a fixed grid of (fusion threshold, cycle
// time[, data-plane chunk]). Horovod fits a Gaussian process and picks points by expected
// improvement; this is the simpler, deterministic replacement: scan the whole fusion axis with the
// others fixed, then the whole cycle axis at the best threshold (then the whole chunk axis, when
// there is one); after that, take the axes in turn checking only the two grid neighbours of the
// best point. Converged when one scan per axis in a row leaves the best point in place: no grid
// neighbour along any axis is better. It also stops when the sample budget is spent. A point is
// never measured twice, so the same scores always give the same sequence. Pure: scores come in
// from outside, nothing here reads a clock.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <vector>

namespace korovod {

struct TunedParams {
  int64_t fusion_threshold_bytes = 0;
  double cycle_time_ms = 0;
  // Pipelining unit of the shared-memory collectives (Backend::set_chunk_bytes); 0 = not tuned,
  // each backend keeps its configured unit.
  int64_t chunk_bytes = 0;
  bool operator==(const TunedParams&) const = default;
};

class CoordinateSearch {
 public:
  // Fusion and cycle grids must be non-empty; an empty chunk grid leaves the chunk out of the
  // search (start.chunk_bytes is kept). `start` is snapped to the nearest grid point (log scale).
  CoordinateSearch(std::vector<int64_t> fusion_grid, std::vector<double> cycle_grid, TunedParams start,
                   int max_samples, std::vector<int64_t> chunk_grid = {});

  // The point to measure next; once finished(), the best point found.
  TunedParams current() const;
  // The score of current() (higher is better); moves on to the next unmeasured point.
  void report(double score);
  bool finished() const { return finished_; }
  TunedParams best() const { return at(best_); }
  double best_score() const { return best_score_; }
  int samples() const { return static_cast<int>(scores_.size()); }

 private:
  using Point = std::array<int, 3>;  // (fusion index, cycle index, chunk index)
  TunedParams at(Point p) const;
  int axes() const { return chunk_grid_.empty() ? 2 : 3; }
  int axis_size(int axis) const;
  void plan_scan();  // queue the unmeasured points on the current axis through best_
  void advance();    // next point to measure, or finish

  std::vector<int64_t> fusion_grid_;
  std::vector<double> cycle_grid_;
  std::vector<int64_t> chunk_grid_;
  int64_t fixed_chunk_ = 0;  // start.chunk_bytes, when the chunk is not searched
  int max_samples_;
  std::map<Point, double> scores_;
  std::deque<Point> queue_;
  Point current_;
  Point best_;
  double best_score_ = 0;
  int axis_ = 0;                // 0: fusion threshold, 1: cycle time, 2: chunk
  Point best_at_scan_start_;
  int unchanged_scans_ = 0;     // consecutive axis scans that left best_ in place
  int scans_planned_ = 0;       // the first axes() are whole-axis scans
  bool finished_ = false;
};

}  // namespace korovod
