// korovod-bench: measurements shared by the CLI (korovod_bench.cc) and the workloads
// (bench_workloads.cc).
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "bench_gloo.h"
#include "korovod/runtime.h"
#include "korovod/transport.h"

namespace korovod::bench {

struct Options {
  int64_t min_bytes = 4 << 10;
  int64_t max_bytes = 256 << 20;
  int iters = 50;
  int warmup = 3;
  std::vector<std::string> dtypes = {"float32", "bfloat16"};
  std::string op = "sum";
  int fused_tensors = 256;
  int64_t fused_bytes = 16 << 10;
  int fused_iters = 30;
  bool sweep = true;
  bool fused = true;
  bool data_plane = true;  // also time the data plane alone (shared memory, or TCP when forced)
  bool gloo = true;        // also time Gloo's ring allreduce (TCP on loopback), same buffers
  // Every variant's timed iteration also reads its whole output once, as the optimizer would:
  // an output left in cache (plain stores) or sent to memory (streaming stores) is then paid for
  // where it is used, not only where it is written.
  bool read_output = false;
  double idle_seconds = 0;  // > 0: also measure idle CPU (IdleCpu), sleeping this long
  double compute_seconds = 1;
  std::string json_path;
};

struct Row {
  std::string workload;  // "allreduce" or "fused 256x16KiB"
  std::string dtype;
  int64_t bytes = 0;     // per tensor
  int tensors = 1;
  double korovod_us = 0; // per operation (per step for fused)
  double mpi_us = 0;
  double korovod_busbw_gbs = 0;
  double mpi_busbw_gbs = 0;
  double gloo_us = 0;        // 0: not measured
  double gloo_busbw_gbs = 0;
  double memcpy_gbs = 0;  // one core copying `bytes` (rank 0 alone, same rotation), same run
  // Every rank copying its own `bytes` at the same time (slowest rank's median): each rank of an
  // allreduce must at least read its input and write its output, so with buffers out of cache
  // no allreduce on this host beats this time. 0: not measured.
  double floor_us = 0;
  bool verified = false;  // korovod's results, and Gloo's when measured
  // Fused rows: korovod's one allreduce of all the step's bytes as a single tensor, timed in
  // alternation with the step and, like it, on the same buffers every time (0: not measured).
  // korovod_us / one_us is what submitting many small tensors costs over one big one.
  double one_us = 0;
};

// Runs one allreduce size for `dtype` through korovod, MPI_Allreduce and (when `gloo` is not
// null) Gloo's ring allreduce.
Row measure_allreduce(Runtime& rt, const Options& o, DataType dtype, ReduceOp op, int64_t bytes, GlooPeer* gloo);
// The same through a Backend directly (the shared-memory data plane without the engine).
Row measure_backend_allreduce(Backend& backend, const Options& o, DataType dtype, ReduceOp op, int64_t bytes);
// `tensors` x `bytes` submitted together vs the same number of sequential MPI_Allreduce (and
// Gloo allreduce) calls, and vs one korovod allreduce of all those bytes (Row::one_us).
Row measure_fused(Runtime& rt, const Options& o, DataType dtype, ReduceOp op, GlooPeer* gloo);

// What korovod's threads cost a rank while it does not communicate (--idle-seconds).
struct IdleCpu {
  double idle_seconds = 0;      // every rank slept this long between two allreduces
  double idle_cpu_ms = 0;       // the busiest rank's process CPU time (user + system) meanwhile
  double compute_seconds = 0;   // the last rank computed this long before joining an allreduce
  double waiting_cpu_ms = 0;    // the busiest other rank's process CPU while it waited for that
  double computing_extra_cpu_ms = 0;  // the computing rank's process CPU beyond its computing thread's
  double compute_wall_ms = 0;   // how long that computation took (stolen CPU would stretch it)
};
IdleCpu measure_idle_cpu(Runtime& rt, double idle_seconds, double compute_seconds);

std::string format_table(const std::vector<Row>& rows, int ranks, double cycle_time_ms);
std::string to_json(const std::vector<Row>& rows, int ranks, double cycle_time_ms);

}  // namespace korovod::bench
