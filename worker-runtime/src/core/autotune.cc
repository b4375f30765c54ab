#include "core/autotune.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace korovod {

std::vector<int64_t> AutotuneOptions::default_fusion_grid() {
  std::vector<int64_t> grid;
  for (int64_t mib = 1; mib <= 128; mib *= 2) grid.push_back(mib << 20);
  return grid;
}

std::vector<double> AutotuneOptions::default_cycle_grid() { return {0.5, 1, 2.5, 5, 10, 25, 50}; }

std::vector<int64_t> AutotuneOptions::chunk_grid_for(int64_t slot_bytes) {
  std::vector<int64_t> grid;
  for (int64_t b = 16 << 10; b < slot_bytes; b *= 2) grid.push_back(b);
  grid.push_back(slot_bytes);
  return grid;
}

AutotuneOptions AutotuneOptions::from_config(const Config& config) {
  AutotuneOptions o;
  o.warmup_samples = config.autotune_warmup_samples;
  o.steps_per_sample = config.autotune_steps_per_sample;
  o.windows_per_sample = config.autotune_windows_per_sample;
  o.max_samples = config.autotune_max_samples;
  const bool shm_possible = config.cpu_operations.empty() || config.cpu_operations == "shm";
  if (config.autotune_chunk && shm_possible) o.chunk_grid = chunk_grid_for(config.shm_slot_bytes);
  return o;
}

Autotuner::Autotuner(AutotuneOptions options, TunedParams initial, const Clock& clock)
    : options_(std::move(options)),
      clock_(clock),
      search_(options_.fusion_grid, options_.cycle_grid, initial, options_.max_samples, options_.chunk_grid),
      in_effect_(initial),
      warmup_left_(options_.warmup_samples),
      window_start_(clock.now()) {  // the first window runs from here, not from the clock's epoch
  // The search starts from the grid point nearest to the configured values; warm up on that.
  if (search_.current() != in_effect_) proposal_ = search_.current();
}

void Autotuner::start_window() {
  busy_cycles_ = 0;
  window_bytes_ = 0;
  window_start_ = clock_.now();
}

std::optional<TunedParams> Autotuner::on_cycle(int64_t bytes_reduced) {
  if (proposal_ && !awaiting_apply_) {
    awaiting_apply_ = true;
    return std::exchange(proposal_, std::nullopt);
  }
  if (awaiting_apply_ || search_.finished()) return std::nullopt;
  if (bytes_reduced <= 0) return std::nullopt;  // idle cycles count only as elapsed time
  window_bytes_ += bytes_reduced;
  if (++busy_cycles_ < options_.steps_per_sample) return std::nullopt;
  score_window();
  if (proposal_) {
    awaiting_apply_ = true;
    return std::exchange(proposal_, std::nullopt);
  }
  return std::nullopt;
}

void Autotuner::score_window() {
  const double micros = std::chrono::duration<double, std::micro>(clock_.now() - window_start_).count();
  const double window_score = window_bytes_ / std::max(micros, 1.0);
  start_window();
  if (warmup_left_ > 0) {
    --warmup_left_;
    return;
  }
  window_scores_.push_back(window_score);
  if (static_cast<int>(window_scores_.size()) < options_.windows_per_sample) return;
  const auto middle = window_scores_.begin() + static_cast<std::ptrdiff_t>(window_scores_.size() / 2);
  std::nth_element(window_scores_.begin(), middle, window_scores_.end());
  const double score = *middle;
  window_scores_.clear();
  search_.report(score);
  samples_.push_back(AutotuneSample{++scored_, in_effect_, score, search_.best() == in_effect_});
  if (search_.current() != in_effect_) proposal_ = search_.current();
}

void Autotuner::on_applied(const TunedParams& params) {
  in_effect_ = params;
  awaiting_apply_ = false;
  start_window();
}

std::vector<AutotuneSample> Autotuner::take_samples() { return std::exchange(samples_, {}); }

Result<std::unique_ptr<AutotuneCsv>> AutotuneCsv::open(Env& env, const std::string& path) {
  Result<std::unique_ptr<WritableFile>> f = env.new_writable_file(path);
  if (!f.is_ok()) return Status::invalid_argument(fmt::format("KOROVOD_AUTOTUNE_LOG: {}", f.status().message()));
  KOROVOD_RETURN_IF_ERROR((*f)->append(std::string(kHeader) + "\n"));
  KOROVOD_RETURN_IF_ERROR((*f)->flush());
  return std::unique_ptr<AutotuneCsv>(new AutotuneCsv(std::move(f).value()));
}

void AutotuneCsv::write(const AutotuneSample& s) {
  std::string row = fmt::format("{},{},{},{},{:.4f},{}\n", s.index, s.params.fusion_threshold_bytes,
                                s.params.cycle_time_ms, s.params.chunk_bytes, s.score, s.best ? 1 : 0);
  // Best effort: a full disk does not stop the tuning, the row is lost.
  if (file_->append(row).is_ok()) (void)file_->flush();
}

namespace {
constexpr size_t kEncodedBytes = 2 * sizeof(int64_t) + sizeof(double);
}  // namespace

std::string encode_params(const TunedParams& params) {
  std::string bytes(kEncodedBytes, '\0');
  std::memcpy(bytes.data(), &params.fusion_threshold_bytes, sizeof(int64_t));
  std::memcpy(bytes.data() + sizeof(int64_t), &params.cycle_time_ms, sizeof(double));
  std::memcpy(bytes.data() + sizeof(int64_t) + sizeof(double), &params.chunk_bytes, sizeof(int64_t));
  return bytes;
}

Result<TunedParams> decode_params(const std::string& bytes) {
  if (bytes.size() != kEncodedBytes) {
    return Status::unknown(
        fmt::format("autotune: parameter update of {} bytes, expected {}", bytes.size(), kEncodedBytes));
  }
  TunedParams p;
  std::memcpy(&p.fusion_threshold_bytes, bytes.data(), sizeof(int64_t));
  std::memcpy(&p.cycle_time_ms, bytes.data() + sizeof(int64_t), sizeof(double));
  std::memcpy(&p.chunk_bytes, bytes.data() + sizeof(int64_t) + sizeof(double), sizeof(int64_t));
  return p;
}

}  // namespace korovod
