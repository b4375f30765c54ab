// Horovod's autotune (parameter_manager.cc) as a component of its own: rank 0 measures the
// throughput of the engine (bytes reduced per µs) over windows of cycles, scores each setting
// by the median of several windows (one slow window on a busy machine does not decide), feeds
// the scores to a CoordinateSearch over (fusion threshold, cycle time, shared-memory chunk), and
// hands out the next parameters to try.
// The engine broadcasts them through the negotiation and reports back when every rank applied
// them (on_applied): only then does the next window start, so a window never mixes parameters.
// Time comes from the injected Clock; nothing here does I/O except AutotuneCsv.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/autotune_search.h"
#include "korovod/config.h"
#include "korovod/env.h"
#include "korovod/status.h"

namespace korovod {

struct AutotuneOptions {
  int warmup_samples = 3;    // first windows after start are discarded (buffers, caches warm up)
  int steps_per_sample = 10; // cycles that reduced something, per window
  int windows_per_sample = 5;  // a sample's score is the median of this many windows (Horovod: 5)
  int max_samples = 20;      // scored samples (grid points) at most; then the best point stays
  std::vector<int64_t> fusion_grid = default_fusion_grid();
  std::vector<double> cycle_grid = default_cycle_grid();
  std::vector<int64_t> chunk_grid;  // empty: the chunk is not tuned

  static std::vector<int64_t> default_fusion_grid();  // 1, 2, 4, ..., 128 MiB
  static std::vector<double> default_cycle_grid();    // 0.5, 1, 2.5, 5, 10, 25, 50 ms
  // 16 KiB, 32 KiB, ... doubling up to the slot size, and the slot size itself.
  static std::vector<int64_t> chunk_grid_for(int64_t slot_bytes);
  // The chunk is tuned when shared memory may carry CPU tensors (KOROVOD_CPU_OPERATIONS unset or
  // shm) and KOROVOD_AUTOTUNE_CHUNK is not 0.
  static AutotuneOptions from_config(const Config& config);
};

struct AutotuneSample {
  int index = 0;        // 1-based, scored samples only
  TunedParams params;   // in effect during the sample's windows
  double score = 0;     // median over its windows of bytes reduced per µs of wall time
  bool best = false;    // `params` are the best point after this sample
};

class Autotuner {
 public:
  Autotuner(AutotuneOptions options, TunedParams initial, const Clock& clock);

  // After every cycle (rank 0), with the bytes it reduced. Returns parameters for the engine to
  // broadcast when the search moves on; none while a broadcast is outstanding.
  std::optional<TunedParams> on_cycle(int64_t bytes_reduced);
  // The parameters the engine broadcast are in effect on every rank from the next cycle.
  void on_applied(const TunedParams& params);
  // Samples scored since the last call, in order (for the CSV).
  std::vector<AutotuneSample> take_samples();
  bool done() const { return search_.finished() && !awaiting_apply_ && !proposal_; }
  TunedParams best() const { return search_.best(); }

 private:
  void start_window();
  void score_window();

  const AutotuneOptions options_;
  const Clock& clock_;
  CoordinateSearch search_;
  TunedParams in_effect_;
  std::optional<TunedParams> proposal_;  // to hand out on the next on_cycle
  bool awaiting_apply_ = false;
  int warmup_left_;
  std::vector<double> window_scores_;  // of the sample being measured
  int busy_cycles_ = 0;
  int64_t window_bytes_ = 0;
  Clock::TimePoint window_start_;
  std::vector<AutotuneSample> samples_;
  int scored_ = 0;
};

// The KOROVOD_AUTOTUNE_LOG file: a header, then one row per scored sample, flushed at once so
// the file is complete even if the job is killed.
class AutotuneCsv {
 public:
  static Result<std::unique_ptr<AutotuneCsv>> open(Env& env, const std::string& path);
  AutotuneCsv(const AutotuneCsv&) = delete;
  AutotuneCsv& operator=(const AutotuneCsv&) = delete;
  void write(const AutotuneSample& sample);

  static constexpr const char* kHeader =
      "sample,fusion_threshold_bytes,cycle_time_ms,chunk_bytes,score_bytes_per_us,best";

 private:
  explicit AutotuneCsv(std::unique_ptr<WritableFile> file) : file_(std::move(file)) {}
  std::unique_ptr<WritableFile> file_;
};

// The parameter update as it travels through the negotiation (rank 0's broadcast).
std::string encode_params(const TunedParams& params);
Result<TunedParams> decode_params(const std::string& bytes);

}  // namespace korovod
