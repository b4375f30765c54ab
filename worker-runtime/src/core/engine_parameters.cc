#include "core/engine_parameters.h"

#include <fmt/format.h>

namespace korovod {
namespace {

std::string chunk_name(int64_t bytes) { return bytes > 0 ? fmt::format("{} bytes", bytes) : "not tuned"; }

}  // namespace

Result<std::unique_ptr<EngineParameters>> EngineParameters::create(const Config& config, int rank, Env& env,
                                                                   const Logger& log) {
  const AutotuneOptions options = AutotuneOptions::from_config(config);
  // The chunk starts as configured (the whole slot) on every rank, tuned or not.
  const int64_t chunk = config.autotune && !options.chunk_grid.empty() ? config.shm_slot_bytes : 0;
  const TunedParams initial{config.fusion_threshold_bytes, config.cycle_time_ms, chunk};
  std::unique_ptr<EngineParameters> p(new EngineParameters(initial, log));
  if (rank != 0 || !config.autotune) return p;
  p->tuner_ = std::make_unique<Autotuner>(options, initial, env);
  if (!config.autotune_log.empty()) {
    Result<std::unique_ptr<AutotuneCsv>> csv = AutotuneCsv::open(env, config.autotune_log);
    if (!csv.is_ok()) return csv.status();
    p->csv_ = std::move(csv).value();
  }
  return p;
}

Status EngineParameters::end_cycle(int64_t bytes_reduced, const std::string& received, bool* chunk_changed) {
  ++cycle_;
  if (chunk_changed) *chunk_changed = false;
  if (!received.empty()) {
    Result<TunedParams> update = decode_params(received);
    if (!update.is_ok()) return update.status();
    if (chunk_changed) *chunk_changed = update->chunk_bytes != params_.chunk_bytes;
    params_ = *update;
    log_.log(LogLevel::kInfo, "autotune: from cycle {} on: fusion threshold {} bytes, cycle time {} ms, chunk {}",
             cycle_ + 1, params_.fusion_threshold_bytes, params_.cycle_time_ms, chunk_name(params_.chunk_bytes));
    if (tuner_) tuner_->on_applied(params_);  // this cycle ran on the old parameters: no window
  } else if (tuner_ && !tuner_->done()) {
    if (std::optional<TunedParams> next = tuner_->on_cycle(bytes_reduced)) outgoing_ = encode_params(*next);
    for (const AutotuneSample& s : tuner_->take_samples()) {
      if (csv_) csv_->write(s);
    }
  }
  if (tuner_ && tuner_->done() && !announced_done_) {
    announced_done_ = true;
    const TunedParams best = tuner_->best();
    log_.log(LogLevel::kInfo, "autotune: done; keeping fusion threshold {} bytes, cycle time {} ms, chunk {}",
             best.fusion_threshold_bytes, best.cycle_time_ms, chunk_name(best.chunk_bytes));
  }
  return Status::ok();
}

}  // namespace korovod
