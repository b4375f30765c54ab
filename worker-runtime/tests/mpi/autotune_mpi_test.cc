// rt_autotune_mpi_test: autotune under mpirun. The ctest entry sets KOROVOD_AUTOTUNE=1, the log
// path (through the HOROVOD_ alias) and a sample budget that reaches the chunk axis; a
// training-like loop runs until rank 0's tuner has spent the budget, every element of every
// allreduce result is checked while the parameters (the shared-memory chunk included) change,
// and rank 0 then checks the CSV: header, one row per sample, a best row, several chunks tried.
#include <mpi.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "core/autotune.h"
#include "mpi_check.h"

namespace korovod::mpitest {
namespace {

void check_csv(Checker& c, const Config& config) {
  std::ifstream in(config.autotune_log);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  if (!MPI_CHECK(c, !lines.empty(), "no autotune log at {}", config.autotune_log)) return;
  MPI_CHECK(c, lines[0] == "sample,fusion_threshold_bytes,cycle_time_ms,chunk_bytes,score_bytes_per_us,best",
            "header {}", lines[0]);
  MPI_CHECK(c, lines.size() == static_cast<size_t>(config.autotune_max_samples) + 1, "{} rows, expected {}",
            lines.size() - 1, config.autotune_max_samples);
  const std::regex row(R"((\d+),(\d+),([\d.]+),(\d+),([\d.]+),([01]))");
  int best_rows = 0;
  std::set<std::string> chunks;
  for (size_t i = 1; i < lines.size(); ++i) {
    std::smatch m;
    if (!MPI_CHECK(c, std::regex_match(lines[i], m, row), "malformed row {}", lines[i])) continue;
    MPI_CHECK(c, std::stod(m[5]) > 0, "score of row {} is not positive", lines[i]);
    best_rows += m[6] == "1";
    chunks.insert(m[4]);
  }
  MPI_CHECK(c, best_rows >= 1, "no row marked best");
  // 1 start + 7 thresholds + 6 cycle times + 4 more chunks: the whole chunk axis (16 KiB .. slot).
  MPI_CHECK(c, chunks.size() == AutotuneOptions::chunk_grid_for(config.shm_slot_bytes).size(),
            "{} chunk sizes tried, expected every one of the chunk grid", chunks.size());
  fmt::print("autotune log {}:\n", config.autotune_log);
  for (const auto& l : lines) fmt::print("  {}\n", l);
}

}  // namespace
}  // namespace korovod::mpitest

int main(int argc, char** argv) {
  using namespace korovod;
  using namespace korovod::mpitest;
  int provided = 0, rank = 0, size = 1;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  Checker c(rank);
  Result<Config> config = parse_config(process_environment());
  if (!MPI_CHECK(c, config.is_ok() && config->autotune && !config->autotune_log.empty(),
                 "run with KOROVOD_AUTOTUNE=1 and KOROVOD_AUTOTUNE_LOG set")) {
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (rank == 0) std::filesystem::remove(config->autotune_log);  // a stale log must not pass
  MPI_Barrier(MPI_COMM_WORLD);
  Result<std::unique_ptr<Runtime>> rt = init_mpi_runtime();
  if (!MPI_CHECK(c, rt.is_ok(), "init: {}", rt.status().to_string())) MPI_Abort(MPI_COMM_WORLD, 2);
  const int tensors = 8, count = 16 << 10, steps = 400;
  std::vector<std::vector<float>> grads(tensors, std::vector<float>(count));
  bool all_right = true;
  for (int step = 0; step < steps; ++step) {
    std::vector<Handle> handles;
    for (int t = 0; t < tensors; ++t) {
      for (int i = 0; i < count; ++i) grads[t][i] = static_cast<float>(rank + t + i % 7);
      TensorView v{grads[t].data(), DataType::kFloat32, {count}, kCpuDevice};
      handles.push_back(*(*rt)->allreduce("grad." + std::to_string(t), v, v, ReduceOp::kSum));
    }
    for (Handle h : handles) all_right = (*rt)->wait(h).is_ok() && all_right;
    for (int t = 0; t < tensors; ++t) {
      for (int i = 0; i < count; ++i) {
        all_right = all_right && grads[t][i] == static_cast<float>(size * (size - 1) / 2 + size * (t + i % 7));
      }
    }
  }
  MPI_CHECK(c, all_right, "some allreduce failed or returned a wrong sum while autotune ran");
  Status down = (*rt)->shutdown();
  MPI_CHECK(c, down.is_ok(), "shutdown: {}", down.to_string());
  if (rank == 0) check_csv(c, *config);
  int failures = c.failures(), total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) fmt::print("rt_autotune_mpi_test np={}: {}\n", size, total == 0 ? "all checks passed" : "FAILED");
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
