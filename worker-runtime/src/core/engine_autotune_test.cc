// Autotune through the whole engine, N ranks as N threads over the fake transport: rank 0's
// tuner changes fusion threshold, cycle time and chunk while a training-like loop runs, every rank
// applies each change at the same cycle (and hands the chunk to its backends), results stay
// correct, and the CSV log is written.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <unistd.h>

#include "algorithms/executor.h"
#include "core/testing/forwarding_backend.h"
#include "core/testing/test_ranks.h"
#include "korovod/runtime.h"
#include "transport/fake/fake_world.h"

namespace korovod {
namespace {

struct Applied {
  int64_t cycle = 0;
  int64_t fusion_threshold_bytes = 0;
  double cycle_time_ms = 0;
  int64_t chunk_bytes = 0;
  bool operator==(const Applied&) const = default;
};

// The fake data plane, recording every chunk size the engine hands it.
class ChunkRecordingProvider final : public BackendProvider {
 public:
  ChunkRecordingProvider(std::shared_ptr<fake::FakeWorld> world, int rank, std::vector<int64_t>& chunks, std::mutex& mu)
      : inner_(std::move(world), rank), chunks_(chunks), mu_(mu) {}
  std::string name() const override { return "FAKE"; }
  Result<std::unique_ptr<Backend>> create_backend(const std::vector<int>& global_ranks, int set_id) override {
    Result<std::unique_ptr<Backend>> b = inner_.create_backend(global_ranks, set_id);
    if (!b.is_ok()) return b.status();
    return std::unique_ptr<Backend>(new Recording(std::move(b).value(), chunks_, mu_));
  }

 private:
  struct Recording final : testing::ForwardingBackend {
    Recording(std::unique_ptr<Backend> inner, std::vector<int64_t>& chunks, std::mutex& mu)
        : ForwardingBackend(std::move(inner)), chunks(chunks), mu(mu) {}
    void set_chunk_bytes(int64_t bytes) override {
      std::lock_guard lock(mu);
      chunks.push_back(bytes);
    }
    std::vector<int64_t>& chunks;
    std::mutex& mu;
  };
  fake::FakeBackendProvider inner_;
  std::vector<int64_t>& chunks_;
  std::mutex& mu_;
};

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(EngineAutotune, EveryRankAppliesTheSameParametersAtTheSameCycleAndTheLogIsWritten) {
  const int n = 3, tensors = 6, steps = 400;
  const std::string csv = (std::filesystem::temp_directory_path() /
                           ("korovod_autotune_engine_" + std::to_string(::getpid()) + ".csv")).string();
  auto world = std::make_shared<fake::FakeWorld>(n);
  std::mutex mu;
  std::vector<std::vector<Applied>> applied(n);
  std::vector<std::vector<int64_t>> chunks(n);  // what each rank's backend was told
  std::vector<bool> done_logged(n, false);
  testing::run_ranks(n, [&](int rank) {
    RuntimeOptions o;
    o.make_executor = make_executor;
    o.config.cycle_time_ms = 0.5;
    o.config.collective_timeout_seconds = 10;
    o.config.log_level = LogLevel::kInfo;
    o.config.autotune = true;
    o.config.autotune_log = csv;  // opened by rank 0 only
    o.config.autotune_warmup_samples = 1;
    o.config.autotune_steps_per_sample = 2;
    o.config.autotune_windows_per_sample = 2;
    o.config.autotune_max_samples = 16;  // 1 start + 7 thresholds + 6 cycle times + 2 chunks
    o.config.shm_slot_bytes = 64 << 10;  // chunk grid 16, 32, 64 KiB
    o.log_sink = [&, rank](LogLevel, const std::string& line) {
      static const std::regex re(
          R"(autotune: from cycle (\d+) on: fusion threshold (\d+) bytes, cycle time ([\d.]+) ms, chunk (\d+) bytes)");
      std::smatch m;
      std::lock_guard lock(mu);
      if (std::regex_search(line, m, re)) {
        applied[rank].push_back(Applied{std::stoll(m[1]), std::stoll(m[2]), std::stod(m[3]), std::stoll(m[4])});
      }
      if (line.find("autotune: done") != std::string::npos) done_logged[rank] = true;
    };
    o.transport = std::make_shared<fake::FakeTransportProvider>(world, rank);
    o.backends.push_back(std::make_shared<ChunkRecordingProvider>(world, rank, chunks[rank], mu));
    Result<std::unique_ptr<Runtime>> rt = Runtime::create(std::move(o));
    ASSERT_TRUE(rt.is_ok()) << rt.status().to_string();
    std::vector<std::vector<float>> grads(tensors, std::vector<float>(4096));
    for (int step = 0; step < steps; ++step) {
      std::vector<Handle> handles;
      for (int t = 0; t < tensors; ++t) {
        std::fill(grads[t].begin(), grads[t].end(), static_cast<float>(rank + t));
        TensorView v{grads[t].data(), DataType::kFloat32, {4096}, kCpuDevice};
        Result<Handle> h = (*rt)->allreduce("grad." + std::to_string(t), v, v, ReduceOp::kSum);
        ASSERT_TRUE(h.is_ok()) << h.status().to_string();
        handles.push_back(*h);
      }
      for (Handle h : handles) ASSERT_TRUE((*rt)->wait(h).is_ok());
      for (int t = 0; t < tensors; ++t) {
        ASSERT_EQ(grads[t][4095], static_cast<float>(n * (n - 1) / 2 + n * t)) << "step " << step;
      }
    }
    EXPECT_TRUE((*rt)->shutdown().is_ok());
  });

  // The same changes, at the same cycle, on every rank.
  ASSERT_GE(applied[0].size(), 3u);  // the search moved through several points
  for (int r = 1; r < n; ++r) EXPECT_EQ(applied[r], applied[0]) << "rank " << r;
  EXPECT_TRUE(done_logged[0]);
  bool cycle_time_changed = false;
  std::vector<int64_t> chunk_changes;  // the chunk of every update that moved it
  int64_t chunk = 64 << 10;
  for (const Applied& a : applied[0]) {
    cycle_time_changed = cycle_time_changed || a.cycle_time_ms != 0.5;
    if (a.chunk_bytes != chunk) chunk_changes.push_back(chunk = a.chunk_bytes);
  }
  EXPECT_TRUE(cycle_time_changed);
  // The chunk axis was searched, and each backend heard of exactly the changes, in order.
  EXPECT_GE(chunk_changes.size(), 1u);
  for (int r = 0; r < n; ++r) EXPECT_EQ(chunks[r], chunk_changes) << "rank " << r;

  // Header + one row per scored sample; the last row marked best is the setting left in effect.
  std::vector<std::string> lines = read_lines(csv);
  ASSERT_EQ(lines.size(), 17u);
  EXPECT_EQ(lines[0], "sample,fusion_threshold_bytes,cycle_time_ms,chunk_bytes,score_bytes_per_us,best");
  std::string last_best;
  const std::regex row(R"((\d+),(\d+),([\d.]+),(\d+),([\d.]+),([01]))");
  for (size_t i = 1; i < lines.size(); ++i) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(lines[i], m, row)) << lines[i];
    EXPECT_EQ(std::stoul(m[1]), i);
    EXPECT_GT(std::stod(m[5]), 0.0);
    if (m[6] == "1") last_best = std::string(m[2]) + "," + std::string(m[3]) + "," + std::string(m[4]);
  }
  const Applied& final_setting = applied[0].back();
  EXPECT_EQ(last_best, fmt::format("{},{},{}", final_setting.fusion_threshold_bytes, final_setting.cycle_time_ms,
                                   final_setting.chunk_bytes));
  std::filesystem::remove(csv);
}

}  // namespace
}  // namespace korovod
