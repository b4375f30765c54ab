// Resets on a GPU (issue 13 §1): shutdown() and a new runtime in the same process, as an elastic
// reset or `hvd.shutdown(); hvd.init()` does, with a device allreduce in each runtime. Whatever
// a runtime created on the device (NCCL communicators and their buffers, streams, staging
// memory) must go with it: after the first reset (CUDA's own context and caches settle there),
// the device's free memory, this process's threads and its descriptors must be where they were.
#include <dirent.h>
#include <unistd.h>
#include <fmt/format.h>

#include <functional>

#include "gpu_check.h"

namespace korovod::gputest {
namespace {

int count_entries(const char* dir) {
  int n = 0;
  if (DIR* d = opendir(dir)) {
    while (const dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

struct Footprint {
  size_t free_bytes = 0;
  int threads = 0;
  int fds = 0;
};

Footprint footprint() {
  Footprint f;
  size_t total = 0;
  if (cudaMemGetInfo(&f.free_bytes, &total) != cudaSuccess) f.free_bytes = 0;
  f.threads = count_entries("/proc/self/task");
  f.fds = count_entries("/proc/self/fd");
  return f;
}

// One runtime: a 1 Mi-float device allreduce (NCCL communicators are created on first use), then
// shutdown. False when a step failed (its CHECK says which).
bool one_round(Checker& c, int rank, int size, int device, bool staging, int round,
               const std::function<Result<std::unique_ptr<Runtime>>()>& make) {
  Result<std::unique_ptr<Runtime>> created = make();
  if (!MPI_CHECK(c, created.is_ok(), "reset {}: runtime: {}", round, created.status().to_string())) return false;
  Runtime& rt = **created;
  GpuContext g{rt, c, rank, size, device, staging, {}};
  const int64_t count = 1 << 20;
  DeviceBuffer buf(static_cast<size_t>(count) * 4);
  TensorView t = g.upload(buf, DataType::kFloat32, {count}, std::vector<double>(count, rank + 1.0));
  const std::string name = fmt::format("reset.{}", round);
  if (g.finished(name, rt.allreduce(name, t, t, ReduceOp::kSum))) {
    g.expect_values(name, DataType::kFloat32, g.download(t.data, DataType::kFloat32, count),
                    std::vector<double>(count, size * (size + 1) / 2.0));
  }
  g.outputs.clear();
  const Status down = rt.shutdown();
  return MPI_CHECK(c, down.is_ok(), "reset {}: shutdown: {}", round, down.to_string());
}

}  // namespace

void check_resets(Checker& c, int rank, int size, int device, bool staging, int resets,
                  const std::function<Result<std::unique_ptr<Runtime>>()>& make) {
  if (!one_round(c, rank, size, device, staging, 0, make)) return;
  const Footprint before = footprint();
  for (int round = 1; round <= resets; ++round) {
    if (!one_round(c, rank, size, device, staging, round, make)) return;
  }
  Footprint after = footprint();
  for (int i = 0; i < 100 && after.threads > before.threads; ++i) {  // joined threads linger a moment
    usleep(10000);
    after = footprint();
  }
  // 16 MiB over all resets: far below one NCCL communicator's buffers, above CUDA's own noise.
  const size_t slack = 16u << 20;
  MPI_CHECK(c, after.free_bytes + slack >= before.free_bytes,
            "after {} resets the device has {} MiB less free memory ({} -> {} MiB): something of a runtime stayed",
            resets, (before.free_bytes - after.free_bytes) >> 20, before.free_bytes >> 20, after.free_bytes >> 20);
  MPI_CHECK(c, after.threads == before.threads, "after {} resets: threads {} -> {}", resets, before.threads,
            after.threads);
  MPI_CHECK(c, after.fds == before.fds, "after {} resets: descriptors {} -> {}", resets, before.fds, after.fds);
}

}  // namespace korovod::gputest
