// Autotune as a pure component: the coordinate search on known score landscapes, the tuner's
// windows and warmup on a manual clock, the CSV log, the parameter encoding and the config knobs.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include "core/autotune.h"
#include "core/testing/fake_env.h"

namespace korovod {
namespace {

constexpr int64_t kMiB = 1 << 20;

// A smooth landscape in log space with its maximum at (fusion_opt, cycle_opt); `coupling` > 0
// makes the two axes interact, so one pass of coordinate descent is not enough.
std::function<double(TunedParams)> landscape(int64_t fusion_opt, double cycle_opt, double coupling = 0) {
  return [=](TunedParams p) {
    const double f = std::log2(static_cast<double>(p.fusion_threshold_bytes) / static_cast<double>(fusion_opt));
    const double c = std::log2(p.cycle_time_ms / cycle_opt);
    return 1000.0 - f * f - c * c - coupling * f * c;
  };
}

TunedParams run_search(CoordinateSearch& search, const std::function<double(TunedParams)>& score) {
  while (!search.finished()) search.report(score(search.current()));
  return search.best();
}

TEST(CoordinateSearch, FindsOptimumOfSeparableLandscapeWithinDefaultBudget) {
  CoordinateSearch search(AutotuneOptions::default_fusion_grid(), AutotuneOptions::default_cycle_grid(),
                          TunedParams{128 * kMiB, 1.0}, 20);
  TunedParams best = run_search(search, landscape(16 * kMiB, 5.0));
  EXPECT_EQ(best, (TunedParams{16 * kMiB, 5.0}));
  // 1 start + 7 other thresholds + 6 other cycle times + the 2 threshold neighbours at 5 ms.
  EXPECT_EQ(search.samples(), 16);
}

TEST(CoordinateSearch, FindsOptimumOfCoupledLandscapeInSeveralPasses) {
  CoordinateSearch search(AutotuneOptions::default_fusion_grid(), AutotuneOptions::default_cycle_grid(),
                          TunedParams{128 * kMiB, 50.0}, 40);
  TunedParams best = run_search(search, landscape(4 * kMiB, 2.5, 0.8));
  EXPECT_EQ(best, (TunedParams{4 * kMiB, 2.5}));
  EXPECT_LE(search.samples(), 40);
  EXPECT_GT(search.samples(), 16);  // more than one refinement scan
}

TEST(CoordinateSearch, StopsAtBudgetWithBestSeenSoFar) {
  CoordinateSearch search(AutotuneOptions::default_fusion_grid(), AutotuneOptions::default_cycle_grid(),
                          TunedParams{128 * kMiB, 1.0}, 5);
  auto score = landscape(16 * kMiB, 5.0);
  TunedParams best = run_search(search, score);
  EXPECT_EQ(search.samples(), 5);
  // Measured: 128 MiB (start), then 1, 2, 4, 8 MiB at 1 ms: the best of those is 8 MiB.
  EXPECT_EQ(best, (TunedParams{8 * kMiB, 1.0}));
  EXPECT_EQ(search.current(), best);  // once finished, current() stays on the best point
}

TEST(CoordinateSearch, IsDeterministicAndSnapsStartToGrid) {
  auto trace = [] {
    CoordinateSearch search({kMiB, 4 * kMiB, 16 * kMiB}, {1.0, 10.0}, TunedParams{5 * kMiB, 3.0}, 20);
    std::vector<TunedParams> points;
    auto score = landscape(kMiB, 10.0);
    while (!search.finished()) {
      points.push_back(search.current());
      search.report(score(search.current()));
    }
    return points;
  };
  std::vector<TunedParams> a = trace(), b = trace();
  EXPECT_EQ(a, b);
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a.front(), (TunedParams{4 * kMiB, 1.0}));  // nearest in log scale
}

// A third axis: the chunk. Separable optimum inside the grid; the search finds it and keeps the
// two-axis behaviour of the other tests when no chunk grid is given.
TEST(CoordinateSearch, SearchesTheChunkAxisWhenGivenOne) {
  constexpr int64_t kKiB = 1 << 10;
  auto score = [](TunedParams p) {
    const double f = std::log2(static_cast<double>(p.fusion_threshold_bytes) / (8.0 * kMiB));
    const double c = std::log2(p.cycle_time_ms / 2.5);
    const double k = std::log2(static_cast<double>(p.chunk_bytes) / (32.0 * kKiB));
    return 1000.0 - f * f - c * c - k * k;
  };
  CoordinateSearch search(AutotuneOptions::default_fusion_grid(), AutotuneOptions::default_cycle_grid(),
                          TunedParams{128 * kMiB, 1.0, 64 * kKiB}, 30, AutotuneOptions::chunk_grid_for(64 * kKiB));
  std::vector<TunedParams> seen;
  while (!search.finished()) {
    seen.push_back(search.current());
    search.report(score(search.current()));
  }
  EXPECT_EQ(search.best(), (TunedParams{8 * kMiB, 2.5, 32 * kKiB}));
  EXPECT_LE(seen.size(), 20u);  // 8 + 6 + 2 whole-axis points, then a few neighbours
  for (const TunedParams& p : seen) EXPECT_TRUE(p.chunk_bytes == 16 * kKiB || p.chunk_bytes == 32 * kKiB || p.chunk_bytes == 64 * kKiB);

  CoordinateSearch two_axes(AutotuneOptions::default_fusion_grid(), AutotuneOptions::default_cycle_grid(),
                            TunedParams{128 * kMiB, 1.0, 12345}, 30);
  while (!two_axes.finished()) {
    EXPECT_EQ(two_axes.current().chunk_bytes, 12345);  // carried through, never searched
    two_axes.report(score(TunedParams{two_axes.current().fusion_threshold_bytes, two_axes.current().cycle_time_ms, 32 * kKiB}));
  }
}

TEST(AutotuneOptions, ChunkGridFollowsTheSlotAndTheDataPlane) {
  EXPECT_EQ(AutotuneOptions::chunk_grid_for(64 << 10), (std::vector<int64_t>{16 << 10, 32 << 10, 64 << 10}));
  EXPECT_EQ(AutotuneOptions::chunk_grid_for(100 << 10), (std::vector<int64_t>{16 << 10, 32 << 10, 64 << 10, 100 << 10}));
  EXPECT_EQ(AutotuneOptions::chunk_grid_for(8 << 10), (std::vector<int64_t>{8 << 10}));
  Config c;
  c.autotune = true;
  EXPECT_EQ(AutotuneOptions::from_config(c).chunk_grid.size(), 5u);  // default data plane: shared memory (16 KiB .. 256 KiB)
  c.cpu_operations = "mpi";
  EXPECT_TRUE(AutotuneOptions::from_config(c).chunk_grid.empty());   // no shared-memory rings to tune
  c.cpu_operations = "";
  c.autotune_chunk = false;
  EXPECT_TRUE(AutotuneOptions::from_config(c).chunk_grid.empty());
  EXPECT_FALSE(parse_config({{"KOROVOD_AUTOTUNE_CHUNK", "0"}})->autotune_chunk);
}

// The Env's fake time, moved in (fractional) microseconds; it rounds each step to whole ns.
class ManualClock {
 public:
  void advance_us(double us) {
    env.advance(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double, std::micro>(us)));
  }
  operator const Clock&() const { return env; }

 private:
  testing::FakeEnv env;
};

// Drives an Autotuner as the engine would: a cycle of `bytes` takes bytes / rate(params) µs;
// a proposal is applied one cycle later (the broadcast cycle).
struct TunerHarness {
  ManualClock clock;
  std::function<double(TunedParams)> rate;
  TunedParams in_effect;
  std::vector<AutotuneSample> samples;
  std::vector<TunedParams> applied;

  void run(Autotuner& tuner, int cycles, int64_t bytes) {
    std::optional<TunedParams> in_flight;
    for (int i = 0; i < cycles && !tuner.done(); ++i) {
      clock.advance_us(static_cast<double>(bytes) / rate(in_effect));
      if (in_flight) {
        in_effect = *in_flight;
        applied.push_back(in_effect);
        tuner.on_applied(in_effect);
        in_flight.reset();
        continue;
      }
      in_flight = tuner.on_cycle(bytes);
      for (auto& s : tuner.take_samples()) samples.push_back(s);
    }
  }
};

TEST(Autotuner, ConvergesToOptimumScoringBytesPerMicrosecond) {
  AutotuneOptions o;
  o.warmup_samples = 2;
  o.steps_per_sample = 4;
  o.windows_per_sample = 3;
  o.max_samples = 20;
  TunerHarness h;
  h.rate = landscape(16 * kMiB, 5.0);
  h.in_effect = {128 * kMiB, 1.0};
  Autotuner tuner(o, h.in_effect, h.clock);
  h.run(tuner, 10000, 1 << 20);
  ASSERT_TRUE(tuner.done());
  EXPECT_EQ(tuner.best(), (TunedParams{16 * kMiB, 5.0}));
  EXPECT_EQ(h.in_effect, tuner.best());  // the best point is what the engine is left with
  ASSERT_EQ(h.samples.size(), 16u);      // warmup windows are not reported
  for (const AutotuneSample& s : h.samples) {
    // bytes/µs of that window (the manual clock rounds each cycle to whole nanoseconds)
    EXPECT_NEAR(s.score, h.rate(s.params), 1e-5 * h.rate(s.params)) << s.index;
  }
  EXPECT_TRUE(h.samples.back().best || h.samples.back().params != tuner.best());
  int best_rows = 0;
  for (const auto& s : h.samples) best_rows += s.params == tuner.best() && s.best;
  EXPECT_EQ(best_rows, 1);
}

TEST(Autotuner, WarmupSamplesAreDiscardedAndIdleCyclesOnlyAddTime) {
  AutotuneOptions o;
  o.warmup_samples = 3;
  o.steps_per_sample = 2;
  o.windows_per_sample = 1;
  o.max_samples = 1;
  ManualClock clock;
  Autotuner tuner(o, TunedParams{128 * kMiB, 1.0}, clock);  // on the grid: nothing to propose
  for (int i = 0; i < 6; ++i) {  // 3 warmup samples of 2 busy cycles
    clock.advance_us(10);
    EXPECT_FALSE(tuner.on_cycle(100));
  }
  EXPECT_TRUE(tuner.take_samples().empty());
  clock.advance_us(10);
  EXPECT_FALSE(tuner.on_cycle(100));
  clock.advance_us(80);  // idle cycle: time, no bytes, not a step
  EXPECT_FALSE(tuner.on_cycle(0));
  clock.advance_us(10);
  EXPECT_FALSE(tuner.on_cycle(100));  // budget of 1 sample: the start point is the best
  std::vector<AutotuneSample> s = tuner.take_samples();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_DOUBLE_EQ(s[0].score, 200.0 / 100.0);
  EXPECT_TRUE(s[0].best);
  EXPECT_TRUE(tuner.done());
}

TEST(Autotuner, SampleScoresTheMedianWindowSoOneSlowWindowDoesNotDecide) {
  AutotuneOptions o;
  o.warmup_samples = 0;
  o.steps_per_sample = 1;
  o.windows_per_sample = 3;
  o.max_samples = 1;
  ManualClock clock;
  Autotuner tuner(o, TunedParams{128 * kMiB, 1.0}, clock);
  for (double us : {10.0, 1000.0, 20.0}) {  // 100 bytes per window: 10, 0.1 and 5 bytes/µs
    EXPECT_TRUE(tuner.take_samples().empty());
    clock.advance_us(us);
    EXPECT_FALSE(tuner.on_cycle(100));
  }
  std::vector<AutotuneSample> s = tuner.take_samples();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_DOUBLE_EQ(s[0].score, 5.0);
}

TEST(Autotuner, ProposesGridStartFirstWhenConfigIsOffGrid) {
  ManualClock clock;
  Autotuner tuner(AutotuneOptions{}, TunedParams{3 * kMiB, 0.7}, clock);
  std::optional<TunedParams> first = tuner.on_cycle(0);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(*first, (TunedParams{4 * kMiB, 0.5}));
  EXPECT_FALSE(tuner.on_cycle(100));  // nothing more until the engine applied it
}

TEST(AutotuneCsv, WritesHeaderAndOneRowPerSample) {
  SystemEnv env;
  const auto path = std::filesystem::temp_directory_path() / ("autotune_csv_" + std::to_string(::getpid()) + ".csv");
  {
    auto csv = AutotuneCsv::open(env, path.string());
    ASSERT_TRUE(csv.is_ok()) << csv.status().to_string();
    (*csv)->write(AutotuneSample{1, {8 * kMiB, 2.5, 32768}, 1234.5, true});
    (*csv)->write(AutotuneSample{2, {16 * kMiB, 2.5}, 99.25, false});
  }
  std::ifstream in(path);
  std::string header, row1, row2, extra;
  std::getline(in, header), std::getline(in, row1), std::getline(in, row2);
  EXPECT_EQ(header, "sample,fusion_threshold_bytes,cycle_time_ms,chunk_bytes,score_bytes_per_us,best");
  EXPECT_EQ(row1, "1,8388608,2.5,32768,1234.5000,1");
  EXPECT_EQ(row2, "2,16777216,2.5,0,99.2500,0");  // 0: chunk not tuned
  EXPECT_FALSE(std::getline(in, extra));
  std::filesystem::remove(path);
  const auto refused = AutotuneCsv::open(env, "/nonexistent-dir/x.csv");
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().message().rfind("KOROVOD_AUTOTUNE_LOG: cannot open '/nonexistent-dir/x.csv': ", 0), 0u)
      << refused.status().message();
}

TEST(AutotuneParams, RoundTripAndRejectGarbage) {
  TunedParams p{64 * kMiB + 3, 2.5, 48 << 10};
  Result<TunedParams> back = decode_params(encode_params(p));
  ASSERT_TRUE(back.is_ok());
  EXPECT_EQ(*back, p);
  EXPECT_FALSE(decode_params("short").is_ok());
}

TEST(AutotuneConfig, ReadsKorovodAndHorovodNames) {
  Result<Config> c = parse_config({{"HOROVOD_AUTOTUNE", "1"}, {"HOROVOD_AUTOTUNE_LOG", "/tmp/a.csv"},
                                   {"HOROVOD_AUTOTUNE_WARMUP_SAMPLES", "1"}, {"HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE", "5"},
                                   {"HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", "7"},
                                   {"KOROVOD_AUTOTUNE_WINDOWS_PER_SAMPLE", "2"}});
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_TRUE(c->autotune);
  EXPECT_EQ(c->autotune_log, "/tmp/a.csv");
  EXPECT_EQ(c->autotune_warmup_samples, 1);
  EXPECT_EQ(c->autotune_steps_per_sample, 5);
  EXPECT_EQ(c->autotune_max_samples, 7);
  EXPECT_EQ(c->autotune_windows_per_sample, 2);
  c = parse_config({{"HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", "7"}, {"KOROVOD_AUTOTUNE_MAX_SAMPLES", "9"}});
  EXPECT_EQ(c->autotune_max_samples, 9);
  EXPECT_FALSE(c->autotune);
  EXPECT_FALSE(parse_config({{"KOROVOD_AUTOTUNE_STEPS_PER_SAMPLE", "0"}}).is_ok());
}

}  // namespace
}  // namespace korovod
