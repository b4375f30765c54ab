// Grouped/async ops, join, process sets, every mismatch error, stalls, idle and late ranks and
// the timeline file.
#include <mpi.h>
#include <nlohmann/json.hpp>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <set>
#include <thread>

#include "mpi_check.h"

namespace korovod::mpitest {
namespace {

TensorView f32(std::vector<float>& v) {
  return TensorView{v.data(), DataType::kFloat32, {static_cast<int64_t>(v.size())}, kCpuDevice};
}

// Enqueues on every rank, waits, and checks that the error names the tensor and `ranks_text`.
void expect_error(Runtime& rt, Checker& c, const std::string& what, Result<Handle> h, const std::string& tensor,
                  const std::string& ranks_text) {
  Status s = h.is_ok() ? rt.wait(*h) : h.status();
  MPI_CHECK(c, !s.is_ok(), "{}: expected an error", what);
  MPI_CHECK(c, s.message().find("'" + tensor + "'") != std::string::npos, "{}: tensor not named: {}", what, s.message());
  MPI_CHECK(c, s.message().find(ranks_text) != std::string::npos, "{}: '{}' not in: {}", what, ranks_text, s.message());
}

}  // namespace

void check_grouped_async_join(Runtime& rt, Checker& c) {
  const int rank = rt.rank(), size = rt.size();
  std::vector<std::vector<float>> ins(64, std::vector<float>(33, 1.f + rank)), outs(64, std::vector<float>(33));
  std::vector<std::string> names;
  std::vector<TensorView> iv, ov;
  for (int i = 0; i < 64; ++i) {
    names.push_back("grouped." + std::to_string(i));
    iv.push_back(f32(ins[i]));
    ov.push_back(f32(outs[i]));
  }
  auto hs = rt.grouped_allreduce(names, iv, ov, ReduceOp::kAverage, 2.0, 1.0);
  if (MPI_CHECK(c, hs.is_ok(), "grouped enqueue")) {
    size_t done = 0;
    while (done < hs->size()) {  // async: poll until every handle reports done
      done = 0;
      for (Handle h : *hs) done += *rt.poll(h) ? 1 : 0;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    for (Handle h : *hs) MPI_CHECK(c, rt.wait(h).is_ok(), "grouped op");
    const float want = 2.f * (size + 1) / 2.f;  // prescale 2, average of 1..size
    MPI_CHECK(c, std::abs(outs[63][32] - want) < 1e-5, "grouped average got {} want {}", outs[63][32], want);
  }
  // Join: the last rank joins first; the others keep reducing (it contributes zeros).
  if (rank == size - 1) {
    auto j = rt.join();
    Status s = j.is_ok() ? rt.wait(*j) : j.status();
    MPI_CHECK(c, s.is_ok() && rt.output(*j)->last_joined_rank == (size > 1 ? 0 : rank), "join on last rank: {}", s.to_string());
  } else {
    std::vector<float> x(10, 1.f);
    auto h = rt.allreduce("while_joined", f32(x), f32(x), ReduceOp::kSum);
    MPI_CHECK(c, h.is_ok() && rt.wait(*h).is_ok() && x[9] == size - 1, "allreduce with a joined rank: {}", x[9]);
    if (rank == 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto j = rt.join();
    MPI_CHECK(c, j.is_ok() && rt.wait(*j).is_ok() && rt.output(*j)->last_joined_rank == 0, "join");
  }
  auto b = rt.barrier();
  MPI_CHECK(c, b.is_ok() && rt.wait(*b).is_ok(), "barrier");
}

void check_process_sets(Runtime& rt, Checker& c) {
  const int rank = rt.rank(), size = rt.size();
  // Static set 1 = {0, size-1} (given at init).
  std::vector<float> x(3, 1.f);
  if (rank == 0 || rank == size - 1) {
    auto h = rt.allreduce("ps.static", f32(x), f32(x), ReduceOp::kSum, 1, 1, 1);
    MPI_CHECK(c, h.is_ok() && rt.wait(*h).is_ok() && x[0] == (size > 1 ? 2.f : 1.f), "static set allreduce {}", x[0]);
  } else {
    MPI_CHECK(c, !rt.allreduce("ps.static", f32(x), f32(x), ReduceOp::kSum, 1, 1, 1).is_ok(), "non-member refused");
  }
  // Dynamic set of the odd ranks (or rank 0 alone when size == 1... size >= 2 here).
  std::vector<int> odd;
  for (int r = 1; r < size; r += 2) odd.push_back(r);
  Result<int> id = rt.add_process_set(odd);
  if (!MPI_CHECK(c, id.is_ok(), "add_process_set: {}", id.status().to_string())) return;
  MPI_CHECK(c, *rt.process_set_size(*id) == static_cast<int>(odd.size()), "dynamic set size");
  if (rank % 2 == 1) {
    std::vector<float> y(5, static_cast<float>(rank));
    auto h = rt.broadcast("ps.dynamic", f32(y), odd.back(), *id);
    MPI_CHECK(c, h.is_ok() && rt.wait(*h).is_ok() && y[4] == odd.back(), "dynamic set broadcast");
  }
  Status removed = rt.remove_process_set(*id);
  MPI_CHECK(c, removed.is_ok(), "remove_process_set: {}", removed.to_string());
  MPI_CHECK(c, !rt.process_set_size(*id).is_ok(), "removed set still listed");
}

void check_mismatch_errors(Runtime& rt, Checker& c) {
  const int rank = rt.rank(), size = rt.size();
  const int odd = size - 1;  // the rank that sends something different
  const std::string odd_ranks = fmt::format("ranks [{}]", odd);
  std::vector<float> buf(8, 1.f);
  std::vector<double> dbuf(8, 1.0);
  {  // shape
    std::vector<float> v(rank == odd ? 5 : 4, 1.f);
    expect_error(rt, c, "shape", rt.allreduce("mm.shape", f32(v), f32(v)), "mm.shape", odd_ranks + " sent [5]");
  }
  {  // dtype
    TensorView v = rank == odd ? TensorView{dbuf.data(), DataType::kFloat64, {4}, kCpuDevice} : f32(buf);
    v.shape = {4};
    expect_error(rt, c, "dtype", rt.allreduce("mm.dtype", v, v), "mm.dtype", odd_ranks + " sent float64");
  }
  {  // op
    expect_error(rt, c, "op", rt.allreduce("mm.op", f32(buf), f32(buf), rank == odd ? ReduceOp::kMax : ReduceOp::kSum),
                 "mm.op", odd_ranks + " sent MAX");
  }
  {  // root
    expect_error(rt, c, "root", rt.broadcast("mm.root", f32(buf), rank == odd ? odd : 0), "mm.root",
                 odd_ranks + fmt::format(" sent root {}", odd));
  }
  {  // device: the odd rank claims a GPU tensor
    TensorView v = f32(buf);
    if (rank == odd) v.device = 0;
    expect_error(rt, c, "device", rt.allreduce("mm.device", v, v), "mm.device", odd_ranks + " sent GPU");
  }
  {  // operation type
    Result<Handle> h = rank == odd ? rt.broadcast("mm.type", f32(buf), 0) : rt.allreduce("mm.type", f32(buf), f32(buf));
    expect_error(rt, c, "type", std::move(h), "mm.type", odd_ranks + " sent BROADCAST");
  }
  {  // allgather trailing dims
    std::vector<float> v(6, 1.f);
    TensorView t = f32(v);
    t.shape = rank == odd ? std::vector<int64_t>{3, 2} : std::vector<int64_t>{2, 3};
    expect_error(rt, c, "allgather dims", rt.allgather("mm.ag", t), "mm.ag", odd_ranks);
  }
  // After errors the engine keeps working.
  std::vector<float> ok(2, 1.f);
  auto h = rt.allreduce("after.errors", f32(ok), f32(ok), ReduceOp::kSum);
  MPI_CHECK(c, h.is_ok() && rt.wait(*h).is_ok() && ok[0] == size, "allreduce after errors");
}

void check_stall(Runtime& rt, Checker& c) {
  // The last rank never submits: the others fail within the stall shutdown time (2 s here).
  const int rank = rt.rank(), size = rt.size();
  if (rank != size - 1) {
    std::vector<float> x(4, 1.f);
    auto start = std::chrono::steady_clock::now();
    expect_error(rt, c, "stall", rt.allreduce("never.everywhere", f32(x), f32(x)), "never.everywhere",
                 fmt::format("ranks [{}] did not submit", size - 1));
    double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    MPI_CHECK(c, waited < rt.config().stall_shutdown_seconds + 2.0, "stall error took {} s", waited);
  }
  // Leave together. Not rt.barrier(): the idle rank would submit it seconds before the others
  // and the stall inspector would (rightly) fail it.
  MPI_Barrier(MPI_COMM_WORLD);
}

namespace {

Status allreduce_now(Runtime& rt, const std::string& name) {
  std::vector<float> x(4, 1.f);
  Result<Handle> h = rt.allreduce(name, f32(x), f32(x));
  if (!h.is_ok()) return h.status();
  Status s = rt.wait(*h);
  rt.release(*h);
  return s;
}

}  // namespace

double process_cpu_ms() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto ms = [](const timeval& t) { return t.tv_sec * 1e3 + t.tv_usec / 1e3; };
  return ms(u.ru_utime) + ms(u.ru_stime);
}

double max_over_ranks(double mine) {
  double most = 0;
  MPI_Allreduce(&mine, &most, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return most;
}

void check_idle_and_late_ranks(Runtime& rt, Checker& c) {
  // With the negotiation on shared memory the runtime's threads sleep while nothing is to be
  // negotiated: an idle rank, a rank waiting for a late one and the late rank itself use
  // (almost) no CPU -- on a node whose cores all train, anything else is taken from training.
  // (Other control planes cycle on Horovod's timer; their CPU is not checked.)
  const int rank = rt.rank(), size = rt.size();
  const std::string forced = test_config().cpu_operations;
  const bool evented = forced != "mpi" && forced != "tcp";
  constexpr double kIdleSeconds = 1.0, kLateSeconds = 0.5, kMostCpuMs = 50;
  MPI_CHECK(c, allreduce_now(rt, "idle.before").is_ok(), "allreduce before idling");
  const double idle_start = process_cpu_ms();
  std::this_thread::sleep_for(std::chrono::duration<double>(kIdleSeconds));
  const double idle_cpu = max_over_ranks(process_cpu_ms() - idle_start);
  MPI_CHECK(c, !evented || idle_cpu < kMostCpuMs, "idle for {} s, a rank used {:.1f} ms of CPU", kIdleSeconds, idle_cpu);
  // The last rank joins half a second late (asleep meanwhile, so its process CPU is korovod's).
  const double wait_start = process_cpu_ms();
  if (rank == size - 1) std::this_thread::sleep_for(std::chrono::duration<double>(kLateSeconds));
  Status late = allreduce_now(rt, "late.rank");
  const double wait_cpu = max_over_ranks(process_cpu_ms() - wait_start);
  MPI_CHECK(c, late.is_ok(), "allreduce with a late rank: {}", late.to_string());
  MPI_CHECK(c, !evented || wait_cpu < kMostCpuMs, "waiting {} s for the late rank, a rank used {:.1f} ms of CPU",
            kLateSeconds, wait_cpu);
  // An operation nobody waits on or polls (its callback is all the caller looks at) still runs
  // within about a cycle time, though the background thread no longer wakes every cycle time.
  std::atomic<bool> called{false};
  std::vector<float> x(4, 1.f + rank);
  CollectiveArgs a;
  a.name = "callback.only";
  a.input = a.output = f32(x);
  a.op = ReduceOp::kSum;
  a.on_done = [&called](const Status& s, const OpOutput&) { called = s.is_ok(); };
  Result<Handle> h = rt.enqueue(std::move(a));
  const auto start = std::chrono::steady_clock::now();
  while (h.is_ok() && !called.load() && std::chrono::steady_clock::now() - start < std::chrono::seconds(5)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  MPI_CHECK(c, h.is_ok() && called.load(), "an operation with a callback only did not complete within 5 s");
  MPI_CHECK(c, x[0] == size * (size + 1) / 2.f, "callback-only allreduce: {} (expected {})", x[0], size * (size + 1) / 2.f);
  if (h.is_ok()) rt.release(*h);
}

void check_timeline(Runtime&, Checker& c, const std::string& path) {
  std::ifstream in(path);
  nlohmann::json trace = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!MPI_CHECK(c, trace.is_array() && !trace.empty(), "timeline {} is not a JSON array", path)) return;
  std::set<std::string> names;
  for (const auto& rec : trace) {
    if (rec.contains("name") && rec["name"].is_string()) names.insert(rec["name"].get<std::string>());
  }
  for (const char* expected : {"NEGOTIATE_ALLREDUCE", "ALLREDUCE", "MEMCPY_IN_FUSION_BUFFER",
                               "MEMCPY_OUT_FUSION_BUFFER", "NEGOTIATE_ALLGATHER", "ALLGATHER",
                               "BROADCAST", "ALLTOALL", "REDUCESCATTER", "CYCLE_START",
                               "process_name", "process_sort_index", "INIT_FUSION_BUFFER"}) {
    MPI_CHECK(c, names.count(expected) == 1, "timeline lacks {}", expected);
  }
  // The backend op is named after the data plane that ran it (Horovod: MPI_ALLREDUCE,
  // NCCL_ALLREDUCE, ...): SHM_* on one host by default, MPI_* with KOROVOD_CPU_OPERATIONS=mpi,
  // and only TCP_* with KOROVOD_CPU_OPERATIONS=tcp (the forced data plane really ran).
  const bool tcp = test_config().cpu_operations == "tcp";
  for (const char* op : {"ALLREDUCE", "ALLGATHER", "BCAST"}) {
    const size_t ran = tcp ? names.count(fmt::format("TCP_{}", op))
                           : names.count(fmt::format("MPI_{}", op)) + names.count(fmt::format("SHM_{}", op));
    MPI_CHECK(c, ran >= 1 && (tcp || names.count(fmt::format("TCP_{}", op)) == 0), "timeline lacks {}_{}",
              tcp ? "TCP" : "MPI / SHM", op);
  }
  std::remove(path.c_str());
}

}  // namespace korovod::mpitest
