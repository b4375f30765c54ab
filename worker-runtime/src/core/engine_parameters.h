// The tunable engine parameters in effect on this rank (fusion threshold, cycle time, the
// shared-memory chunk) and, with
// KOROVOD_AUTOTUNE on rank 0, the Autotuner that changes them. A change travels as rank 0's
// parameter update in one negotiation cycle of the global process set; every rank receives it in
// that same cycle and applies it when the cycle ends, so from the next cycle on all ranks fuse
// with the same threshold (fusion plans stay identical). Background thread only.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "core/autotune.h"
#include "core/logger.h"

namespace korovod {

class EngineParameters {
 public:
  // Opens the autotune log on rank 0 (an unwritable path is an error).
  static Result<std::unique_ptr<EngineParameters>> create(const Config& config, int rank, Env& env,
                                                          const Logger& log);

  int64_t fusion_threshold_bytes() const { return params_.fusion_threshold_bytes; }
  double cycle_time_ms() const { return params_.cycle_time_ms; }
  // Shared-memory pipelining unit for every backend (Backend::set_chunk_bytes); 0 = untuned.
  int64_t chunk_bytes() const { return params_.chunk_bytes; }
  // Rank 0: the update to send in this cycle's negotiation of the global set ("" = none).
  std::string take_outgoing() { return std::exchange(outgoing_, {}); }
  bool has_outgoing() const { return !outgoing_.empty(); }  // the next cycle has an update to send
  // After each cycle: what this rank reduced, and the update the global set's negotiation
  // delivered in it ("" = none). Sets *chunk_changed when the update moved the chunk (the caller
  // hands it to the backends before the next cycle).
  Status end_cycle(int64_t bytes_reduced, const std::string& received, bool* chunk_changed = nullptr);

 private:
  EngineParameters(TunedParams initial, const Logger& log) : params_(initial), log_(log) {}

  TunedParams params_;
  const Logger& log_;
  std::unique_ptr<Autotuner> tuner_;  // rank 0 with autotune only
  std::unique_ptr<AutotuneCsv> csv_;  // rank 0 with an autotune log only
  std::string outgoing_;
  int64_t cycle_ = 0;
  bool announced_done_ = false;
};

}  // namespace korovod
