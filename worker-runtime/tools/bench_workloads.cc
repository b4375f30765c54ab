#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <cmath>
#include <memory>
#include <thread>

#include "bench.h"
#include "kernels/half.h"
#include "kernels/kernels.h"

namespace korovod::bench {
namespace {

// The same reduction as korovod, as an MPI user op, for the 16-bit float baselines.
template <DataType D>
void half_sum(void* in, void* inout, int* len, MPI_Datatype*) {
  kernels::reduce_into(D, ReduceOp::kSum, inout, in, *len);
}

struct MpiType {
  MPI_Datatype type;
  MPI_Op op;
  bool owned_op = false;
  ~MpiType() {
    if (owned_op) MPI_Op_free(&op);
  }
};

std::unique_ptr<MpiType> mpi_type(DataType dtype, ReduceOp op) {
  auto t = std::make_unique<MpiType>();
  t->op = op == ReduceOp::kMin ? MPI_MIN : op == ReduceOp::kMax ? MPI_MAX : op == ReduceOp::kProduct ? MPI_PROD : MPI_SUM;
  switch (dtype) {
    case DataType::kFloat64: t->type = MPI_DOUBLE; break;
    case DataType::kInt32: t->type = MPI_INT32_T; break;
    case DataType::kFloat16:
      t->type = MPI_UINT16_T;
      MPI_Op_create(&half_sum<DataType::kFloat16>, 1, &t->op);
      t->owned_op = true;
      break;
    case DataType::kBFloat16:
      t->type = MPI_UINT16_T;
      MPI_Op_create(&half_sum<DataType::kBFloat16>, 1, &t->op);
      t->owned_op = true;
      break;
    default: t->type = MPI_FLOAT;
  }
  return t;
}

// rank+1 everywhere: sums are small integers, exact in every float type.
void fill(std::vector<std::byte>& buf, DataType dtype, int64_t count, int rank) {
  for (int64_t i = 0; i < count; ++i) {
    double v = rank + 1;
    switch (dtype) {
      case DataType::kFloat64: reinterpret_cast<double*>(buf.data())[i] = v; break;
      case DataType::kInt32: reinterpret_cast<int32_t*>(buf.data())[i] = static_cast<int32_t>(v); break;
      case DataType::kFloat16: reinterpret_cast<uint16_t*>(buf.data())[i] = kernels::float_to_float16(float(v)); break;
      case DataType::kBFloat16: reinterpret_cast<uint16_t*>(buf.data())[i] = kernels::float_to_bfloat16(float(v)); break;
      default: reinterpret_cast<float*>(buf.data())[i] = static_cast<float>(v);
    }
  }
}

double value_at(const std::vector<std::byte>& buf, DataType dtype, int64_t i) {
  switch (dtype) {
    case DataType::kFloat64: return reinterpret_cast<const double*>(buf.data())[i];
    case DataType::kInt32: return reinterpret_cast<const int32_t*>(buf.data())[i];
    case DataType::kFloat16: return kernels::float16_to_float(reinterpret_cast<const uint16_t*>(buf.data())[i]);
    case DataType::kBFloat16: return kernels::bfloat16_to_float(reinterpret_cast<const uint16_t*>(buf.data())[i]);
    default: return reinterpret_cast<const float*>(buf.data())[i];
  }
}

double expected_sum(int size) { return size * (size + 1) / 2.0; }

bool verify(const std::vector<std::byte>& buf, DataType dtype, int64_t count, ReduceOp op, int size) {
  double want = op == ReduceOp::kSum ? expected_sum(size) : op == ReduceOp::kMax ? size : op == ReduceOp::kMin ? 1 : -1;
  if (want < 0) return true;  // other ops: not checked here
  for (int64_t i : {int64_t{0}, count / 2, count - 1}) {
    if (count > 0 && value_at(buf, dtype, i) != want) return false;
  }
  return true;
}

// Slowest rank's median seconds per iteration of `body`. The median, not the mean: on a shared
// machine an iteration that lost its time slice to another process says nothing about either
// data path, and both variants are treated alike.
template <typename Body>
double timed(int iters, Body body) {
  std::vector<double> times(static_cast<size_t>(iters));
  MPI_Barrier(MPI_COMM_WORLD);
  for (int i = 0; i < iters; ++i) {
    double start = MPI_Wtime();
    body(i);
    times[static_cast<size_t>(i)] = MPI_Wtime() - start;
  }
  std::nth_element(times.begin(), times.begin() + iters / 2, times.end());
  double mine = times[static_cast<size_t>(iters / 2)], slowest = 0;
  MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

// Slowest rank's median seconds per iteration of `a` and of `b`, timed in alternation (a then b
// on even iterations, b then a on odd ones) rather than one after the other: on a machine whose
// speed changes from one second to the next (a host neighbour taking this vCPU's sibling), both
// variants then see the same mix of fast and slow moments, and their ratio means something.
template <typename A, typename B>
std::pair<double, double> timed_interleaved(int iters, A a, B b) {
  std::vector<double> ta(static_cast<size_t>(iters)), tb(static_cast<size_t>(iters));
  MPI_Barrier(MPI_COMM_WORLD);
  auto time = [](auto& body, int i) {
    double start = MPI_Wtime();
    body(i);
    return MPI_Wtime() - start;
  };
  for (int i = 0; i < iters; ++i) {
    if (i % 2 == 0) {
      ta[static_cast<size_t>(i)] = time(a, i);
      tb[static_cast<size_t>(i)] = time(b, i);
    } else {
      tb[static_cast<size_t>(i)] = time(b, i);
      ta[static_cast<size_t>(i)] = time(a, i);
    }
  }
  auto slowest_median = [iters](std::vector<double>& t) {
    std::nth_element(t.begin(), t.begin() + iters / 2, t.end());
    double mine = t[static_cast<size_t>(iters / 2)], slowest = 0;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
  };
  const double ma = slowest_median(ta);
  return {ma, slowest_median(tb)};
}

double busbw_gbs(int64_t bytes, int size, double seconds) {
  return seconds > 0 ? bytes * 2.0 * (size - 1) / size / seconds / 1e9 : 0;
}

int iterations_for(const Options& o, int64_t bytes) {
  // About 2 GiB moved per variant, within [5, o.iters].
  return static_cast<int>(std::clamp<int64_t>((int64_t{2} << 30) / std::max<int64_t>(bytes, 1), 5, o.iters));
}

// Buffers in rotation for one size: enough that together they overflow the 32 MiB L3 for sizes
// from 1 MiB up (64 MiB per side), so neither korovod nor MPI reads a warm cache the other
// variant left behind; small sizes rotate through 64 buffers (they would be hot in practice).
int rotation_for(int64_t bytes) {
  return static_cast<int>(std::clamp<int64_t>((int64_t{64} << 20) / std::max<int64_t>(bytes, 1), 1, 64));
}

// Median seconds of `iters` copies of `bytes` between rotated buffers on this rank.
double median_copy_seconds(std::vector<std::vector<std::byte>>& ins, std::vector<std::vector<std::byte>>& outs,
                           int64_t bytes, int iters) {
  const size_t k = ins.size();
  for (size_t i = 0; i < k; ++i) std::memcpy(outs[i].data(), ins[i].data(), static_cast<size_t>(bytes));
  std::vector<double> times(static_cast<size_t>(iters));
  for (int i = 0; i < iters; ++i) {
    double start = MPI_Wtime();
    std::memcpy(outs[i % k].data(), ins[i % k].data(), static_cast<size_t>(bytes));
    times[static_cast<size_t>(i)] = MPI_Wtime() - start;
  }
  std::nth_element(times.begin(), times.begin() + iters / 2, times.end());
  return times[static_cast<size_t>(iters / 2)];
}

// Rank 0 alone copies `bytes` between rotated buffers: the single-core memcpy rate the shared
// memory path is measured against (the others wait in a barrier, so DRAM is not shared).
double memcpy_gbs(std::vector<std::vector<std::byte>>& ins, std::vector<std::vector<std::byte>>& outs, int64_t bytes,
                  int iters, int rank) {
  MPI_Barrier(MPI_COMM_WORLD);
  double rate = 0;
  if (rank == 0) rate = bytes / median_copy_seconds(ins, outs, bytes, iters) / 1e9;
  MPI_Bcast(&rate, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return rate;
}

// Every rank copies `bytes` between its rotated buffers at the same time: the slowest rank's
// median, in microseconds (Row::floor_us).
double all_ranks_copy_us(std::vector<std::vector<std::byte>>& ins, std::vector<std::vector<std::byte>>& outs,
                         int64_t bytes, int iters) {
  MPI_Barrier(MPI_COMM_WORLD);
  double mine = median_copy_seconds(ins, outs, bytes, iters), slowest = 0;
  MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest * 1e6;
}

// Reads every 8-byte word of `out` (the consumer of the result, --read-output).
uint64_t read_all(const std::vector<std::byte>& out) {
  uint64_t acc = 0;
  const size_t words = out.size() / sizeof(uint64_t);
  for (size_t i = 0; i < words; ++i) {
    uint64_t w;
    std::memcpy(&w, out.data() + i * sizeof(uint64_t), sizeof w);
    acc ^= w;
  }
  return acc;
}

// `op(i)` followed, with --read-output, by reading output i (same for every variant).
template <typename Op>
auto with_reader(const Options& o, std::vector<std::vector<std::byte>>& outs, Op op) {
  return [&o, &outs, op](int i) {
    op(i);
    if (o.read_output) {
      volatile uint64_t sink = read_all(outs[static_cast<size_t>(i) % outs.size()]);
      (void)sink;
    }
  };
}

double process_cpu_ms() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto ms = [](const timeval& t) { return t.tv_sec * 1e3 + t.tv_usec / 1e3; };
  return ms(u.ru_utime) + ms(u.ru_stime);
}

double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

double max_over_ranks(double mine) {
  double most = 0;
  MPI_Allreduce(&mine, &most, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return most;
}

// One small korovod allreduce, waited for: the ranks' only synchronisation in measure_idle_cpu
// (an MPI barrier would busy-poll itself).
void korovod_sync(Runtime& rt, const std::string& name) {
  std::vector<float> x(16, 1.f);
  Handle h = *rt.allreduce(name, TensorView{x.data(), DataType::kFloat32, {16}, kCpuDevice},
                           TensorView{x.data(), DataType::kFloat32, {16}, kCpuDevice}, ReduceOp::kSum);
  (void)rt.wait(h);
  rt.release(h);
}

}  // namespace

IdleCpu measure_idle_cpu(Runtime& rt, double idle_seconds, double compute_seconds) {
  IdleCpu r;
  r.idle_seconds = idle_seconds;
  r.compute_seconds = compute_seconds;
  // Idle: every rank sleeps between two allreduces; whatever CPU the process uses meanwhile is
  // the runtime's own (the main thread sleeps).
  korovod_sync(rt, "idle.before");
  const double idle_start = process_cpu_ms();
  std::this_thread::sleep_for(std::chrono::duration<double>(idle_seconds));
  const double idle_cpu = process_cpu_ms() - idle_start;
  korovod_sync(rt, "idle.after");
  // Waiting: the last rank computes (one thread, busy) before it joins the allreduce the others
  // already wait on. The waiters' CPU is what waiting costs; the computing rank's process CPU
  // beyond its computing thread's is what korovod's threads took from the computation.
  const bool computes = rt.rank() == rt.size() - 1;
  double waiting_cpu = 0, extra_cpu = 0, compute_wall = 0;
  if (computes) {
    const double process_start = process_cpu_ms(), thread_start = thread_cpu_ms();
    const auto start = std::chrono::steady_clock::now();
    volatile double sink = 0;
    while (std::chrono::steady_clock::now() - start < std::chrono::duration<double>(compute_seconds)) {
      for (int i = 0; i < 1000; ++i) sink = sink + std::sqrt(static_cast<double>(i));
    }
    compute_wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    extra_cpu = (process_cpu_ms() - process_start) - (thread_cpu_ms() - thread_start);
    korovod_sync(rt, "idle.join");
  } else {
    const double start = process_cpu_ms();
    korovod_sync(rt, "idle.join");
    waiting_cpu = process_cpu_ms() - start;
  }
  r.idle_cpu_ms = max_over_ranks(idle_cpu);
  r.waiting_cpu_ms = max_over_ranks(waiting_cpu);
  r.computing_extra_cpu_ms = max_over_ranks(extra_cpu);
  r.compute_wall_ms = max_over_ranks(compute_wall);
  return r;
}

Row measure_allreduce(Runtime& rt, const Options& o, DataType dtype, ReduceOp op, int64_t bytes, GlooPeer* gloo) {
  const int64_t count = bytes / element_size(dtype);
  const int k = rotation_for(bytes);
  // MPI writes its own outputs, so korovod's are verified on what korovod wrote.
  std::vector<std::vector<std::byte>> ins(k, std::vector<std::byte>(bytes)), outs = ins, mpi_outs = ins;
  for (auto& in : ins) fill(in, dtype, count, rt.rank());
  const std::string name = "bench." + std::to_string(bytes);
  auto korovod_once = with_reader(o, outs, [&](int i) {
    TensorView input{ins[i % k].data(), dtype, {count}, kCpuDevice}, output{outs[i % k].data(), dtype, {count}, kCpuDevice};
    Handle h = *rt.allreduce(name, input, output, op);
    (void)rt.wait(h);
    rt.release(h);
  });
  auto type = mpi_type(dtype, op);
  // Interleaved with korovod: MPI takes the buffers half a rotation away, so neither reads a
  // cache the other just warmed.
  auto mpi_once = with_reader(o, mpi_outs, [&](int i) {
    const int j = (i + k / 2) % k;
    MPI_Allreduce(ins[j].data(), mpi_outs[j].data(), static_cast<int>(count), type->type, type->op, MPI_COMM_WORLD);
  });
  bool gloo_ok = true;
  auto gloo_once = with_reader(o, outs, [&](int i) {
    gloo_ok = gloo->allreduce(ins[i % k].data(), outs[i % k].data(), count, dtype, op).is_ok() && gloo_ok;
  });
  const int iters = iterations_for(o, bytes);
  for (int i = 0; i < o.warmup; ++i) {
    korovod_once(i), mpi_once(i);
    if (gloo) gloo_once(i);
  }
  Row row{"allreduce", std::string(dtype_name(dtype)), bytes, 1};
  auto verified_outputs = [&] {
    bool ok = true;
    for (int i = 0; i < std::min(k, iters); ++i) ok = ok && verify(outs[i], dtype, count, op, rt.size());
    for (auto& out : outs) std::fill(out.begin(), out.end(), std::byte{0});  // for the next variant
    return ok;
  };
  for (auto& out : outs) std::fill(out.begin(), out.end(), std::byte{0});
  row.verified = true;
  if (gloo) {
    row.gloo_us = timed(iters, gloo_once) * 1e6;
    row.verified = gloo_ok && verified_outputs();
    row.gloo_busbw_gbs = busbw_gbs(bytes, rt.size(), row.gloo_us / 1e6);
  }
  const auto [korovod_s, mpi_s] = timed_interleaved(iters, korovod_once, mpi_once);
  row.korovod_us = korovod_s * 1e6;
  row.mpi_us = mpi_s * 1e6;
  row.verified = verified_outputs() && row.verified;
  row.memcpy_gbs = memcpy_gbs(ins, outs, bytes, iters, rt.rank());
  row.floor_us = all_ranks_copy_us(ins, outs, bytes, iters);
  row.korovod_busbw_gbs = busbw_gbs(bytes, rt.size(), row.korovod_us / 1e6);
  row.mpi_busbw_gbs = busbw_gbs(bytes, rt.size(), row.mpi_us / 1e6);
  return row;
}

Row measure_backend_allreduce(Backend& backend, const Options& o, DataType dtype, ReduceOp op, int64_t bytes) {
  const int64_t count = bytes / element_size(dtype);
  const int k = rotation_for(bytes);
  std::vector<std::vector<std::byte>> ins(k, std::vector<std::byte>(bytes)), outs = ins, mpi_outs = ins;
  for (auto& in : ins) fill(in, dtype, count, backend.rank());
  auto backend_once = with_reader(o, outs, [&](int i) {
    (void)backend.allreduce(ins[i % k].data(), outs[i % k].data(), count, dtype, op);
  });
  auto type = mpi_type(dtype, op);
  auto mpi_once = with_reader(o, mpi_outs, [&](int i) {  // half a rotation away, as above
    const int j = (i + k / 2) % k;
    MPI_Allreduce(ins[j].data(), mpi_outs[j].data(), static_cast<int>(count), type->type, type->op, MPI_COMM_WORLD);
  });
  const int iters = iterations_for(o, bytes);
  for (int i = 0; i < o.warmup; ++i) backend_once(i), mpi_once(i);
  Row row{backend.name() + " data plane", std::string(dtype_name(dtype)), bytes, 1};
  for (auto& out : outs) std::fill(out.begin(), out.end(), std::byte{0});
  const auto [backend_s, mpi_s] = timed_interleaved(iters, backend_once, mpi_once);
  row.korovod_us = backend_s * 1e6;
  row.mpi_us = mpi_s * 1e6;
  row.verified = true;
  for (int i = 0; i < std::min(k, iters); ++i) row.verified = row.verified && verify(outs[i], dtype, count, op, backend.size());
  row.memcpy_gbs = memcpy_gbs(ins, outs, bytes, iters, backend.rank());
  row.floor_us = all_ranks_copy_us(ins, outs, bytes, iters);
  row.korovod_busbw_gbs = busbw_gbs(bytes, backend.size(), row.korovod_us / 1e6);
  row.mpi_busbw_gbs = busbw_gbs(bytes, backend.size(), row.mpi_us / 1e6);
  return row;
}

Row measure_fused(Runtime& rt, const Options& o, DataType dtype, ReduceOp op, GlooPeer* gloo) {
  const int n = o.fused_tensors;
  const int64_t count = o.fused_bytes / element_size(dtype);
  std::vector<std::vector<std::byte>> ins(n, std::vector<std::byte>(o.fused_bytes)), outs = ins;
  for (auto& b : ins) fill(b, dtype, count, rt.rank());
  std::vector<std::string> names;
  for (int t = 0; t < n; ++t) names.push_back("fused." + std::to_string(t));
  std::vector<Handle> handles(n);
  auto korovod_step = [&](int) {
    for (int t = 0; t < n; ++t) {  // submitted one by one, as a backward pass does
      handles[t] = *rt.allreduce(names[t], TensorView{ins[t].data(), dtype, {count}, kCpuDevice},
                                 TensorView{outs[t].data(), dtype, {count}, kCpuDevice}, op);
    }
    for (Handle h : handles) (void)rt.wait(h), rt.release(h);
  };
  auto type = mpi_type(dtype, op);
  auto mpi_step = [&](int) {
    for (int t = 0; t < n; ++t) {
      MPI_Allreduce(ins[t].data(), outs[t].data(), static_cast<int>(count), type->type, type->op, MPI_COMM_WORLD);
    }
  };
  bool gloo_ok = true;
  auto gloo_step = [&](int) {
    for (int t = 0; t < n; ++t) gloo_ok = gloo->allreduce(ins[t].data(), outs[t].data(), count, dtype, op).is_ok() && gloo_ok;
  };
  for (int i = 0; i < o.warmup; ++i) {
    korovod_step(i), mpi_step(i);
    if (gloo) gloo_step(i);
  }
  Row row{"fused " + std::to_string(n) + "x" + std::to_string(o.fused_bytes >> 10) + "KiB",
          std::string(dtype_name(dtype)), o.fused_bytes, n};
  row.mpi_us = timed(o.fused_iters, mpi_step) * 1e6;
  auto verified_outputs = [&] {
    bool ok = true;
    for (auto& b : outs) ok = ok && verify(b, dtype, count, op, rt.size());
    for (auto& b : outs) std::fill(b.begin(), b.end(), std::byte{0});
    return ok;
  };
  for (auto& b : outs) std::fill(b.begin(), b.end(), std::byte{0});
  const int64_t total = o.fused_bytes * n;
  row.verified = true;
  if (gloo) {
    row.gloo_us = timed(o.fused_iters, gloo_step) * 1e6;
    row.verified = gloo_ok && verified_outputs();
    row.gloo_busbw_gbs = busbw_gbs(total, rt.size(), row.gloo_us / 1e6);
  }
  // One tensor of all the step's bytes, in cache like the step's own buffers: the time the step
  // would take if submitting many tensors cost nothing over submitting one.
  std::vector<std::byte> one_in(static_cast<size_t>(total)), one_out(static_cast<size_t>(total));
  fill(one_in, dtype, count * n, rt.rank());
  auto one_step = [&](int) {
    Handle h = *rt.allreduce("fused.one", TensorView{one_in.data(), dtype, {count * n}, kCpuDevice},
                             TensorView{one_out.data(), dtype, {count * n}, kCpuDevice}, op);
    (void)rt.wait(h);
    rt.release(h);
  };
  for (int i = 0; i < o.warmup; ++i) one_step(i);
  const auto [step_s, one_s] = timed_interleaved(o.fused_iters, korovod_step, one_step);
  row.korovod_us = step_s * 1e6;
  row.one_us = one_s * 1e6;
  row.verified = verified_outputs() && verify(one_out, dtype, count * n, op, rt.size()) && row.verified;
  row.korovod_busbw_gbs = busbw_gbs(total, rt.size(), row.korovod_us / 1e6);
  row.mpi_busbw_gbs = busbw_gbs(total, rt.size(), row.mpi_us / 1e6);
  return row;
}

}  // namespace korovod::bench
