// korovod-bench: allreduce bus bandwidth through korovod, plain MPI_Allreduce and Gloo's ring
// allreduce in the same run (sweep 4 KiB..256 MiB, float32 and bfloat16), plus a fused training-step workload.
// Run under mpirun, e.g.  mpirun -np 2 --bind-to none korovod-bench --json out.json
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <optional>

#include "bench.h"
#include "korovod/mpi.h"
#include "transport/mpi/mpi_providers.h"
#include "transport/shm/shm_provider.h"
#include "transport/tcp/tcp_provider.h"

namespace korovod::bench {

std::string format_table(const std::vector<Row>& rows, int ranks, double cycle_time_ms) {
  std::string out = fmt::format("korovod-bench: {} ranks, cycle time {} ms, times are per operation (per step for fused)\n",
                                ranks, cycle_time_ms);
  out += fmt::format("{:<20} {:<9} {:>10} {:>12} {:>12} {:>10} {:>10} {:>8} {:>12} {:>10} {:>8} {:>10} {:>8} {:>9} {:>8} {:>6}\n",
                     "workload", "dtype", "size", "korovod_us", "mpi_us", "kv_GB/s", "mpi_GB/s", "ratio", "gloo_us",
                     "gloo_GB/s", "kv/gloo", "memcpy_GB/s", "kv/mcpy", "floor_us", "kv/floor", "check");
  for (const Row& r : rows) {
    std::string size = r.bytes >= (1 << 20) ? fmt::format("{}MiB", r.bytes >> 20) : fmt::format("{}KiB", r.bytes >> 10);
    // ratio > 1: korovod faster. Bandwidth ratio == time ratio for the same bytes.
    // kv/gloo > 1: korovod faster than Gloo; "-" where Gloo was not measured.
    const bool g = r.gloo_us > 0;
    // floor_us: every rank copying its own bytes at once; kv/floor 1.0 = korovod at that floor.
    const bool f = r.floor_us > 0;
    out += fmt::format("{:<20} {:<9} {:>10} {:>12.1f} {:>12.1f} {:>10.3f} {:>10.3f} {:>8.3f} {:>12} {:>10} {:>8} {:>10.3f} {:>8.3f} {:>9} {:>8} {:>6}\n",
                       r.workload, r.dtype, size, r.korovod_us, r.mpi_us, r.korovod_busbw_gbs, r.mpi_busbw_gbs,
                       r.korovod_us > 0 ? r.mpi_us / r.korovod_us : 0.0, g ? fmt::format("{:.1f}", r.gloo_us) : "-",
                       g ? fmt::format("{:.3f}", r.gloo_busbw_gbs) : "-",
                       g && r.korovod_us > 0 ? fmt::format("{:.3f}", r.gloo_us / r.korovod_us) : "-", r.memcpy_gbs,
                       r.memcpy_gbs > 0 ? r.korovod_busbw_gbs / r.memcpy_gbs : 0.0,
                       f ? fmt::format("{:.1f}", r.floor_us) : "-",
                       f && r.korovod_us > 0 ? fmt::format("{:.3f}", r.floor_us / r.korovod_us) : "-",
                       r.verified ? "ok" : "WRONG");
  }
  for (const Row& r : rows) {
    if (r.one_us <= 0) continue;
    out += fmt::format("{} {}: step {:.1f} us, one korovod allreduce of the same {} KiB {:.1f} us (alternating, "
                       "same buffers each time): step/one {:.3f}\n",
                       r.workload, r.dtype, r.korovod_us, r.bytes * r.tensors >> 10, r.one_us, r.korovod_us / r.one_us);
  }
  return out;
}

std::string to_json(const std::vector<Row>& rows, int ranks, double cycle_time_ms) {
  nlohmann::json j = {{"ranks", ranks}, {"cycle_time_ms", cycle_time_ms}, {"rows", nlohmann::json::array()}};
  for (const Row& r : rows) {
    j["rows"].push_back({{"workload", r.workload}, {"dtype", r.dtype}, {"bytes", r.bytes}, {"tensors", r.tensors},
                         {"korovod_us", r.korovod_us}, {"mpi_us", r.mpi_us},
                         {"korovod_busbw_gbs", r.korovod_busbw_gbs}, {"mpi_busbw_gbs", r.mpi_busbw_gbs}, {"memcpy_gbs", r.memcpy_gbs},
                         {"floor_us", r.floor_us}, {"one_us", r.one_us},
                         {"speedup_vs_mpi", r.korovod_us > 0 ? r.mpi_us / r.korovod_us : 0.0},
                         {"gloo_us", r.gloo_us}, {"gloo_busbw_gbs", r.gloo_busbw_gbs},
                         {"speedup_vs_gloo", r.korovod_us > 0 && r.gloo_us > 0 ? r.gloo_us / r.korovod_us : 0.0},
                         {"verified", r.verified}});
  }
  return j.dump(2);
}

}  // namespace korovod::bench

namespace {

using namespace korovod;

const std::map<std::string, DataType> kDtypes = {{"float32", DataType::kFloat32}, {"bfloat16", DataType::kBFloat16},
                                                  {"float16", DataType::kFloat16}, {"float64", DataType::kFloat64},
                                                  {"int32", DataType::kInt32}};
const std::map<std::string, ReduceOp> kOps = {{"sum", ReduceOp::kSum}, {"min", ReduceOp::kMin},
                                              {"max", ReduceOp::kMax}, {"product", ReduceOp::kProduct}};

int run(const bench::Options& o) {
  auto rt = init_mpi_runtime();
  if (!rt.is_ok()) {
    fmt::print(stderr, "korovod-bench: {}\n", rt.status().to_string());
    return 1;
  }
  Runtime& runtime = **rt;
  // The data plane on its own (shared memory, or TCP when KOROVOD_CPU_OPERATIONS=tcp; the same
  // settings as the runtime's), to separate it from the engine's negotiation and wake-ups.
  std::unique_ptr<Backend> data_plane;
  if (o.data_plane) {
    auto ctx = mpi::MpiContext::create(nullptr, false);
    if (ctx.is_ok()) {
      const Config& c = runtime.config();
      auto transport = std::make_shared<mpi::MpiTransportProvider>(*ctx);
      std::unique_ptr<BackendProvider> provider;
      if (c.cpu_operations == "tcp") {
        tcp::TcpOptions t;
        t.iface = c.tcp_iface;
        t.segment_bytes = c.tcp_segment_bytes;
        t.timeout_seconds = c.collective_timeout_seconds;
        provider = std::make_unique<tcp::TcpBackendProvider>(transport, t);
      } else {
        provider = std::make_unique<shm::ShmBackendProvider>(transport, shm::geometry_from(c), false,
                                                             runtime.env().host().id());
      }
      std::vector<int> everyone(runtime.size());
      for (int r = 0; r < runtime.size(); ++r) everyone[r] = r;
      auto b = provider->create_backend(everyone, 1000);
      if (b.is_ok() && (*b)->enabled(kCpuDevice)) data_plane = std::move(b).value();
    }
  }
  // Gloo as a second peer (what Horovod's Gloo controller calls), same buffers and checks.
  std::unique_ptr<bench::GlooPeer> gloo;
  if (o.gloo) {
    auto peer = bench::GlooPeer::connect(runtime.rank(), runtime.size());
    if (peer.is_ok()) gloo = std::move(peer).value();
    else if (runtime.rank() == 0) fmt::print(stderr, "korovod-bench: no Gloo column: {}\n", peer.status().to_string());
  }
  std::vector<bench::Row> rows;
  bool all_verified = true;
  for (const std::string& name : o.dtypes) {
    const DataType dtype = kDtypes.at(name);
    if (o.sweep) {
      for (int64_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= 4) {
        rows.push_back(bench::measure_allreduce(runtime, o, dtype, kOps.at(o.op), bytes, gloo.get()));
        all_verified = all_verified && rows.back().verified;
      }
    }
    if (o.sweep && data_plane) {
      for (int64_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= 4) {
        rows.push_back(bench::measure_backend_allreduce(*data_plane, o, dtype, kOps.at(o.op), bytes));
        all_verified = all_verified && rows.back().verified;
      }
    }
    if (o.fused) {
      rows.push_back(bench::measure_fused(runtime, o, dtype, kOps.at(o.op), gloo.get()));
      all_verified = all_verified && rows.back().verified;
    }
  }
  std::optional<bench::IdleCpu> idle;
  if (o.idle_seconds > 0) idle = bench::measure_idle_cpu(runtime, o.idle_seconds, o.compute_seconds);
  const double cycle = runtime.config().cycle_time_ms;
  if (runtime.rank() == 0) {
    fmt::print("korovod data planes, first enabled wins: {}\n", fmt::join(runtime.backend_names(), ", "));
    fmt::print("{}", bench::format_table(rows, runtime.size(), cycle));
    if (idle) {
      fmt::print("idle: {:.1f} ms of CPU per rank (most) while sleeping {} s between allreduces\n"
                 "waiting: {:.1f} ms of CPU per waiting rank (most) while the last rank computed {} s; that rank's "
                 "own process used {:.1f} ms beyond its computing thread, and the computation took {:.1f} ms\n",
                 idle->idle_cpu_ms, idle->idle_seconds, idle->waiting_cpu_ms, idle->compute_seconds,
                 idle->computing_extra_cpu_ms, idle->compute_wall_ms);
    }
    if (!o.json_path.empty()) {
      nlohmann::json j = nlohmann::json::parse(bench::to_json(rows, runtime.size(), cycle));
      if (idle) {
        j["idle"] = {{"idle_seconds", idle->idle_seconds}, {"idle_cpu_ms", idle->idle_cpu_ms},
                     {"compute_seconds", idle->compute_seconds}, {"waiting_cpu_ms", idle->waiting_cpu_ms},
                     {"computing_extra_cpu_ms", idle->computing_extra_cpu_ms},
                     {"compute_wall_ms", idle->compute_wall_ms}};
      }
      std::ofstream(o.json_path) << j.dump(2) << "\n";
    }
  }
  Status down = runtime.shutdown();
  if (!down.is_ok()) fmt::print(stderr, "korovod-bench: shutdown: {}\n", down.to_string());
  return all_verified && down.is_ok() ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
  bench::Options o;
  CLI::App app{"korovod-bench: korovod allreduce vs plain MPI_Allreduce in the same run (run under mpirun).\n"
               "Runtime knobs come from the environment (KOROVOD_CYCLE_TIME, KOROVOD_FUSION_THRESHOLD, ...)."};
  app.add_option("--min-bytes", o.min_bytes, "smallest allreduce (sizes grow x4), e.g. 4K")
      ->transform(CLI::AsSizeValue(false))->capture_default_str();
  app.add_option("--max-bytes", o.max_bytes, "largest allreduce, e.g. 256M")
      ->transform(CLI::AsSizeValue(false))->capture_default_str();
  app.add_option("--iters", o.iters, "max timed iterations per size (fewer for large sizes)")->capture_default_str();
  app.add_option("--warmup", o.warmup, "untimed iterations per variant")->capture_default_str();
  app.add_option("--dtype", o.dtypes, "float32, bfloat16, float16, float64, int32 (repeatable)")
      ->check(CLI::IsMember({"float32", "bfloat16", "float16", "float64", "int32"}))->capture_default_str();
  app.add_option("--op", o.op, "sum, min, max, product")->check(CLI::IsMember({"sum", "min", "max", "product"}))
      ->capture_default_str();
  app.add_option("--fused-tensors", o.fused_tensors, "tensors per fused step")->capture_default_str();
  app.add_option("--fused-bytes", o.fused_bytes, "bytes per fused tensor")->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  app.add_option("--fused-iters", o.fused_iters, "timed fused steps")->capture_default_str();
  app.add_flag("!--no-sweep", o.sweep, "skip the size sweep");
  app.add_flag("!--no-fused", o.fused, "skip the fused workload");
  app.add_flag("--read-output", o.read_output,
               "each timed iteration of every variant also reads its output once (sweep rows)");
  app.add_flag("!--no-data-plane", o.data_plane, "skip timing the data plane without the engine (shared memory; TCP with KOROVOD_CPU_OPERATIONS=tcp)");
  app.add_flag("!--no-gloo", o.gloo, "skip the Gloo peer (ring allreduce over TCP on loopback)");
  app.add_option("--idle-seconds", o.idle_seconds,
                 "also measure korovod's CPU use while ranks sleep this long between allreduces, and while "
                 "all but the last rank wait for it to compute --compute-seconds (0: skip)")->capture_default_str();
  app.add_option("--compute-seconds", o.compute_seconds, "see --idle-seconds")->capture_default_str();
  app.add_option("--json", o.json_path, "also write the results as JSON here");
  CLI11_PARSE(app, argc, argv);  // before MPI, so --help works without mpirun

  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  if (provided < MPI_THREAD_MULTIPLE) {
    fmt::print(stderr, "korovod-bench: MPI_THREAD_MULTIPLE is needed (got {})\n", provided);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int rc = run(o);
  MPI_Finalize();
  return rc;
}
