// Allreduce on device tensors: every op NCCL has x every dtype NCCL has (and, staged, uint16
// and int16) x sizes (0, 1, odd, large), in place and out of place; Horovod's scaling (folded
// into NCCL, or applied on the staged host copy); grouped; what NCCL cannot do; and Adasum
// (through host memory, as Horovod's NCCL build: on one host, the ranks' sum).
#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <iterator>
#include <tuple>

#include "gpu_check.h"

namespace korovod::gputest {
namespace {

constexpr DataType kNcclTypes[] = {DataType::kUInt8,   DataType::kInt8,    DataType::kInt32,
                                   DataType::kInt64,   DataType::kFloat16, DataType::kBFloat16,
                                   DataType::kFloat32, DataType::kFloat64};
// Host staging reduces on the host, which has these too (bool: see the broadcasts).
constexpr DataType kHostOnlyTypes[] = {DataType::kUInt16, DataType::kInt16};

// Rank r's element i, and what every op makes of all ranks' elements i.
double input(ReduceOp op, int r, int64_t i) { return op == ReduceOp::kProduct ? 1 + (i + r) % 2 : (r + 1) + i % 3; }

double expected(ReduceOp op, DataType dtype, int size, int64_t i, bool staging) {
  const double sum = size * (size + 1) / 2.0 + size * static_cast<double>(i % 3);
  switch (op) {
    case ReduceOp::kSum: return sum;
    case ReduceOp::kAverage:
      if (is_floating(dtype)) return sum / size;
      // NCCL divides integers (sum / n); the host path multiplies by 1 / n and truncates.
      return staging ? std::trunc(sum * (1.0 / size)) : std::floor(sum / size);
    case ReduceOp::kMin: return 1 + i % 3;
    case ReduceOp::kMax: return size + i % 3;
    case ReduceOp::kProduct: {
      double p = 1;
      for (int r = 0; r < size; ++r) p *= input(op, r, i);
      return p;
    }
    default: return 0;
  }
}

std::vector<double> values(int64_t count, const std::function<double(int64_t)>& at) {
  std::vector<double> v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) v[i] = at(i);
  return v;
}

void one_allreduce(GpuContext& g, DataType dtype, ReduceOp op, int64_t count, bool in_place) {
  const std::string name = fmt::format("ar.{}.{}.{}.{}", dtype_name(dtype), reduce_op_name(op), count, in_place);
  const size_t bytes = static_cast<size_t>(count * element_size(dtype));
  DeviceBuffer in_buf(bytes), out_buf(bytes);
  TensorView in = g.upload(in_buf, dtype, {count}, values(count, [&](int64_t i) { return input(op, g.rank, i); }));
  TensorView out = in_place ? in : TensorView{out_buf.data(), dtype, {count}, g.device};
  if (!g.finished(name, g.rt.allreduce(name, in, out, op))) return;
  g.expect_values(name, dtype, g.download(out.data, dtype, count),
                  values(count, [&](int64_t i) { return expected(op, dtype, g.size, i, g.staging); }));
}

// What NCCL cannot do (int16, a scaled MIN) is an error naming the dtype / op, on every rank;
// host staging does both, as the CPU path does.
void check_what_nccl_cannot_do(GpuContext& g) {
  DeviceBuffer buf(64);
  TensorView i16 = g.upload(buf, DataType::kInt16, {4}, {1, 2, 3, 4});
  Result<Handle> h = g.rt.allreduce("err.int16", i16, i16, ReduceOp::kSum);
  Status s = h.is_ok() ? g.rt.wait(*h) : h.status();
  if (g.staging) {
    MPI_CHECK(g.c, s.is_ok(), "int16 allreduce (staging): {}", s.to_string());
    g.expect_values("int16 allreduce", DataType::kInt16, g.download(i16.data, DataType::kInt16, 4),
                    {1.0 * g.size, 2.0 * g.size, 3.0 * g.size, 4.0 * g.size});
  } else {
    MPI_CHECK(g.c, !s.is_ok() && s.message().find("int16") != std::string::npos, "int16 allreduce: {}", s.to_string());
  }
  TensorView f32 = g.upload(buf, DataType::kFloat32, {4}, {1, 2, 3, 4});
  h = g.rt.allreduce("err.min.scaled", f32, f32, ReduceOp::kMin, 2.0, 1.0);
  s = h.is_ok() ? g.rt.wait(*h) : h.status();
  if (g.staging) {
    MPI_CHECK(g.c, s.is_ok(), "scaled MIN (staging): {}", s.to_string());
    g.expect_values("scaled MIN", DataType::kFloat32, g.download(f32.data, DataType::kFloat32, 4), {2, 4, 6, 8});
  } else {
    MPI_CHECK(g.c, !s.is_ok() && s.message().find("MIN") != std::string::npos, "scaled MIN: {}", s.to_string());
  }
}

// GPU Adasum sums each host's ranks and combines the hosts by Adasum; on the one host of this
// test that is the sum, scaled by prescale x postscale. A set whose size is not a power of 2 is
// refused as on CPU, naming the tensor.
void check_adasum(GpuContext& g) {
  const int64_t n = 1001;
  const bool power_of_2 = (g.size & (g.size - 1)) == 0;
  for (DataType dtype : {DataType::kFloat16, DataType::kFloat32, DataType::kFloat64}) {
    const std::string name = fmt::format("adasum.{}", dtype_name(dtype));
    DeviceBuffer buf(static_cast<size_t>(n * element_size(dtype)));
    TensorView t = g.upload(buf, dtype, {n}, values(n, [&](int64_t i) { return input(ReduceOp::kSum, g.rank, i); }));
    Result<Handle> h = g.rt.allreduce(name, t, t, ReduceOp::kAdasum, 0.5, 3.0);
    if (!power_of_2) {
      const Status s = h.is_ok() ? g.rt.wait(*h) : h.status();
      MPI_CHECK(g.c, !s.is_ok() && s.message().find("power-of-2") != std::string::npos, "{}: {}", name,
                s.to_string());
      continue;
    }
    if (!g.finished(name, h)) continue;
    g.expect_values(name, dtype, g.download(t.data, dtype, n),
                    values(n, [&](int64_t i) { return 1.5 * expected(ReduceOp::kSum, dtype, g.size, i, g.staging); }));
  }
}

}  // namespace

void check_allreduce(GpuContext& g) {
  std::vector<DataType> types(std::begin(kNcclTypes), std::end(kNcclTypes));
  if (g.staging) types.insert(types.end(), std::begin(kHostOnlyTypes), std::end(kHostOnlyTypes));
  for (DataType dtype : types) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
      int k = 0;
      for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{65539}}) one_allreduce(g, dtype, op, count, k++ % 2);
    }
  }
  one_allreduce(g, DataType::kFloat32, ReduceOp::kSum, (int64_t{1} << 22) + 1, false);  // 16 MiB
}

void check_allreduce_scaled_and_grouped(GpuContext& g) {
  const int64_t n = 1001;
  for (DataType dtype : {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64}) {
    // Sum with prescale 0.5 and postscale 3; Average with postscale 2 (Horovod's predivide shape).
    for (auto [op, pre, post] : {std::tuple{ReduceOp::kSum, 0.5, 3.0}, std::tuple{ReduceOp::kAverage, 1.0, 2.0}}) {
      const std::string name = fmt::format("scaled.{}.{}", dtype_name(dtype), reduce_op_name(op));
      DeviceBuffer buf(static_cast<size_t>(n * element_size(dtype)));
      TensorView t = g.upload(buf, dtype, {n}, values(n, [&](int64_t i) { return input(ReduceOp::kSum, g.rank, i); }));
      if (!g.finished(name, g.rt.allreduce(name, t, t, op, pre, post))) continue;
      g.expect_values(name, dtype, g.download(t.data, dtype, n),
                      values(n, [&](int64_t i) { return pre * post * expected(op, dtype, g.size, i, g.staging); }));
    }
  }
  check_what_nccl_cannot_do(g);
  check_adasum(g);

  // Grouped: negotiated together, run one by one (device tensors are not fused).
  std::vector<std::unique_ptr<DeviceBuffer>> bufs;
  std::vector<std::string> names;
  std::vector<TensorView> views;
  for (int t = 0; t < 3; ++t) {
    bufs.push_back(std::make_unique<DeviceBuffer>(static_cast<size_t>(n * 4)));
    names.push_back(fmt::format("grouped.{}", t));
    views.push_back(g.upload(*bufs.back(), DataType::kFloat32, {n}, std::vector<double>(n, (g.rank + 1) * (t + 1))));
  }
  Result<std::vector<Handle>> hs = g.rt.grouped_allreduce(names, views, views, ReduceOp::kSum);
  if (!MPI_CHECK(g.c, hs.is_ok(), "grouped_allreduce: {}", hs.status().to_string())) return;
  for (int t = 0; t < 3; ++t) {
    const Status done = g.rt.wait((*hs)[t]);
    if (!MPI_CHECK(g.c, done.is_ok(), "{}: {}", names[t], done.to_string())) continue;
    g.expect_values(names[t], DataType::kFloat32, g.download(views[t].data, DataType::kFloat32, n),
                    std::vector<double>(n, (t + 1) * g.size * (g.size + 1) / 2.0));
  }
}

}  // namespace korovod::gputest
