// Every collective x every dtype x sizes including 0, 1 and counts not divisible by the size.
#include <cmath>
#include <numeric>

#include "kernels/testing/dtype_values.h"
#include "mpi_check.h"

namespace korovod::mpitest {
namespace {

using testing::load;
using testing::store;

const DataType kTypes[] = {DataType::kUInt8, DataType::kInt8, DataType::kUInt16, DataType::kInt16,
                           DataType::kInt32, DataType::kInt64, DataType::kFloat16, DataType::kFloat32,
                           DataType::kFloat64, DataType::kBool, DataType::kBFloat16};

struct Buffer {
  Buffer(DataType t, std::vector<int64_t> s) : dtype(t), shape(std::move(s)) {
    bytes.resize(std::max<int64_t>(1, view().numel() * element_size(t)));
  }
  TensorView view() { return TensorView{bytes.data(), dtype, shape, kCpuDevice}; }
  DataType dtype;
  std::vector<int64_t> shape;
  std::vector<std::byte> bytes;
};

double input_value(ReduceOp op, DataType t, int rank, int64_t i) {
  if (t == DataType::kBool) return (rank + i) % 2;
  if (op == ReduceOp::kProduct) return 1 + (rank + i) % 2;
  return rank + 1 + i % 3;
}

double expected(ReduceOp op, DataType t, int size, int64_t i) {
  double acc = input_value(op, t, 0, i);
  for (int r = 1; r < size; ++r) {
    double v = input_value(op, t, r, i);
    if (t == DataType::kBool) {
      acc = (op == ReduceOp::kProduct || op == ReduceOp::kMin) ? (acc && v) : (acc || v);
      continue;
    }
    switch (op) {
      case ReduceOp::kMin: acc = std::min(acc, v); break;
      case ReduceOp::kMax: acc = std::max(acc, v); break;
      case ReduceOp::kProduct: acc *= v; break;
      default: acc += v;
    }
  }
  return op == ReduceOp::kAverage ? acc / size : acc;
}

double tolerance(DataType t, double v) {
  if (t == DataType::kFloat16) return std::abs(v) * 1e-3;
  if (t == DataType::kBFloat16) return std::abs(v) * 8e-3;
  if (t == DataType::kFloat32) return std::abs(v) * 1e-6;
  return std::abs(v) * 1e-12;
}

void check_allreduce(Runtime& rt, Checker& c, DataType t) {
  const int64_t counts[] = {0, 1, 7, 1000 + rt.size()};
  std::vector<ReduceOp> ops = {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct};
  if (is_floating(t)) ops.push_back(ReduceOp::kAverage);  // integer average truncates (Horovod)
  std::vector<std::unique_ptr<Buffer>> outs;
  std::vector<std::pair<ReduceOp, int64_t>> what;
  std::vector<Handle> handles;
  for (ReduceOp op : ops) {
    for (int64_t n : counts) {
      Buffer in(t, {n});
      outs.push_back(std::make_unique<Buffer>(t, std::vector<int64_t>{n}));
      for (int64_t i = 0; i < n; ++i) store(t, in.bytes.data(), i, input_value(op, t, rt.rank(), i));
      // In place for odd counts: the output buffer is the input.
      if (n % 2) outs.back()->bytes = in.bytes;
      TensorView input = n % 2 ? outs.back()->view() : in.view();
      auto h = rt.allreduce(fmt::format("ar.{}.{}.{}", dtype_name(t), reduce_op_name(op), n), input,
                            outs.back()->view(), op);
      if (!MPI_CHECK(c, h.is_ok(), "enqueue allreduce: {}", h.status().to_string())) return;
      handles.push_back(*h);
      what.push_back({op, n});
      if (!(n % 2)) rt.wait(*h).is_ok();  // `in` dies at the end of this iteration
    }
  }
  for (size_t k = 0; k < handles.size(); ++k) {
    Status s = rt.wait(handles[k]);
    auto [op, n] = what[k];
    if (!MPI_CHECK(c, s.is_ok(), "allreduce {} {} n={}: {}", dtype_name(t), reduce_op_name(op), n, s.to_string())) continue;
    for (int64_t i = 0; i < n; ++i) {
      double got = load(t, outs[k]->bytes.data(), i), want = expected(op, t, rt.size(), i);
      if (!MPI_CHECK(c, std::abs(got - want) <= tolerance(t, want), "allreduce {} {} n={} [{}]: got {} want {}",
                     dtype_name(t), reduce_op_name(op), n, i, got, want)) break;
    }
  }
}

void check_allgather_broadcast(Runtime& rt, Checker& c, DataType t) {
  const int rank = rt.rank(), size = rt.size();
  Buffer rows(t, {rank % 3, 3});  // dim0 differs per rank, 0 included
  for (int64_t i = 0; i < rows.view().numel(); ++i) store(t, rows.bytes.data(), i, (rank + i) % 2 + (t == DataType::kBool ? 0 : rank));
  auto h = rt.allgather(fmt::format("ag.{}", dtype_name(t)), rows.view());
  Status s = h.is_ok() ? rt.wait(*h) : h.status();
  if (MPI_CHECK(c, s.is_ok(), "allgather {}: {}", dtype_name(t), s.to_string())) {
    OpOutput out = *rt.output(*h);
    int64_t offset = 0;
    for (int r = 0; r < size; ++r) {
      for (int64_t i = 0; i < (r % 3) * 3; ++i, ++offset) {
        double want = (r + i) % 2 + (t == DataType::kBool ? 0 : r);
        MPI_CHECK(c, load(t, out.data, offset) == want, "allgather {} from rank {} [{}]", dtype_name(t), r, i);
      }
    }
    MPI_CHECK(c, out.shape[0] == offset / 3, "allgather {} dim0 {}", dtype_name(t), out.shape[0]);
    rt.release(*h);
  }
  for (int root = 0; root < size; ++root) {
    Buffer b(t, {5});
    for (int64_t i = 0; i < 5; ++i) store(t, b.bytes.data(), i, rank == root ? 1 : 0);
    auto bh = rt.broadcast(fmt::format("bc.{}.{}", dtype_name(t), root), b.view(), root);
    Status bs = bh.is_ok() ? rt.wait(*bh) : bh.status();
    MPI_CHECK(c, bs.is_ok() && load(t, b.bytes.data(), 4) == 1, "broadcast {} root {}: {}", dtype_name(t), root, bs.to_string());
  }
}

void check_alltoall(Runtime& rt, Checker& c, DataType t, bool with_splits) {
  const int rank = rt.rank(), size = rt.size();
  std::vector<int32_t> splits(size, 2);
  if (with_splits) for (int k = 0; k < size; ++k) splits[k] = (k + rank) % 3;
  const int64_t dim0 = std::accumulate(splits.begin(), splits.end(), 0) + (with_splits ? 1 : 0);
  Buffer in(t, {dim0, 2});
  for (int64_t i = 0; i < dim0 * 2; ++i) store(t, in.bytes.data(), i, t == DataType::kBool ? 1 : rank * 10 + (i / 2) % 7);
  auto h = rt.alltoall(fmt::format("a2a.{}.{}", dtype_name(t), with_splits), in.view(),
                       with_splits ? splits : std::vector<int32_t>{});
  Status s = h.is_ok() ? rt.wait(*h) : h.status();
  if (!MPI_CHECK(c, s.is_ok(), "alltoall {}: {}", dtype_name(t), s.to_string())) return;
  OpOutput out = *rt.output(*h);
  int64_t offset = 0;
  for (int src = 0; src < size; ++src) {
    int64_t rows = with_splits ? (rank + src) % 3 : 2, first = 0;
    for (int k = 0; k < rank; ++k) first += with_splits ? (k + src) % 3 : 2;
    MPI_CHECK(c, out.received_splits[src] == rows, "alltoall {} splits from {}", dtype_name(t), src);
    for (int64_t row = 0; row < rows; ++row, offset += 2) {
      double want = t == DataType::kBool ? 1 : src * 10 + (first + row) % 7;
      MPI_CHECK(c, load(t, out.data, offset) == want, "alltoall {} from {} row {}", dtype_name(t), src, row);
    }
  }
  rt.release(*h);
}

void check_reducescatter(Runtime& rt, Checker& c, DataType t) {
  if (t == DataType::kBool) return;
  const int rank = rt.rank(), size = rt.size();
  const int64_t dim0 = 2 * size + 1;  // not divisible: ranks below dim0 % size get an extra row
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage}) {
    if (op == ReduceOp::kAverage && !is_floating(t)) continue;
    Buffer in(t, {dim0, 3});
    for (int64_t i = 0; i < dim0 * 3; ++i) store(t, in.bytes.data(), i, (rank + 1) * (i / 3 % 4 + 1));
    auto h = rt.reducescatter(fmt::format("rs.{}.{}", dtype_name(t), reduce_op_name(op)), in.view(), op);
    Status s = h.is_ok() ? rt.wait(*h) : h.status();
    if (!MPI_CHECK(c, s.is_ok(), "reducescatter {}: {}", dtype_name(t), s.to_string())) continue;
    OpOutput out = *rt.output(*h);
    const int64_t mine = dim0 / size + (rank < dim0 % size ? 1 : 0);
    int64_t first = 0;
    for (int k = 0; k < rank; ++k) first += dim0 / size + (k < dim0 % size ? 1 : 0);
    MPI_CHECK(c, out.shape[0] == mine, "reducescatter {} rows {} want {}", dtype_name(t), out.shape[0], mine);
    for (int64_t row = 0; row < mine; ++row) {
      double want = ((first + row) % 4 + 1) * size * (size + 1) / 2.0;
      if (op == ReduceOp::kAverage) want /= size;
      double got = load(t, out.data, row * 3);
      MPI_CHECK(c, std::abs(got - want) <= tolerance(t, want), "reducescatter {} row {} got {} want {}", dtype_name(t), row, got, want);
    }
    rt.release(*h);
  }
}

}  // namespace

void check_collectives(Runtime& rt, Checker& c) {
  for (DataType t : kTypes) {
    check_allreduce(rt, c, t);
    check_allgather_broadcast(rt, c, t);
    check_alltoall(rt, c, t, false);
    check_alltoall(rt, c, t, true);
    check_reducescatter(rt, c, t);
  }
}

}  // namespace korovod::mpitest
