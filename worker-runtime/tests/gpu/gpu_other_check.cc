// Allgather (uneven dim0; output on the device through an allocator, or handle-owned host
// memory), broadcast (every dtype, bytes only), alltoall with splits, reducescatter (even and
// uneven rows, Sum and Average), barrier.
#include <fmt/format.h>

#include <cmath>

#include "algorithms/algorithm.h"  // reducescatter_rows: the split every rank must agree on
#include "gpu_check.h"

namespace korovod::gputest {

void check_allgather_broadcast(GpuContext& g) {
  const int64_t cols = 3;
  for (DataType dtype : {DataType::kUInt8, DataType::kInt64, DataType::kBFloat16, DataType::kFloat32}) {
    for (bool on_device : {true, false}) {
      const std::string name = fmt::format("ag.{}.{}", dtype_name(dtype), on_device ? "device" : "owned");
      const int64_t rows = g.rank + 1;  // rank r sends r + 1 rows
      std::vector<double> mine, want;
      for (int64_t i = 0; i < rows * cols; ++i) mine.push_back(10 * g.rank + i % 10);
      for (int r = 0; r < g.size; ++r) {
        for (int64_t i = 0; i < (r + 1) * cols; ++i) want.push_back(10 * r + i % 10);
      }
      DeviceBuffer buf(mine.size() * element_size(dtype));
      CollectiveArgs a;
      a.type = RequestType::kAllgather;
      a.name = name;
      a.input = g.upload(buf, dtype, {rows, cols}, mine);
      if (on_device) a.allocator = g.device_allocator(dtype);
      Result<Handle> h = g.rt.enqueue(std::move(a));
      if (!g.finished(name, h)) continue;
      Result<OpOutput> out = g.rt.output(*h);
      if (!MPI_CHECK(g.c, out.is_ok() && out->shape == (std::vector<int64_t>{g.size * (g.size + 1) / 2, cols}),
                     "{}: output shape", name)) {
        continue;
      }
      g.expect_values(name, dtype, g.download(out->data, dtype, static_cast<int64_t>(want.size())), want);
      g.rt.release(*h);
    }
  }
  const int root = g.size - 1;
  for (DataType dtype : {DataType::kUInt8, DataType::kInt8, DataType::kUInt16, DataType::kInt16, DataType::kInt32,
                         DataType::kInt64, DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                         DataType::kFloat64, DataType::kBool}) {
    for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{4099}}) {
      const std::string name = fmt::format("bc.{}.{}", dtype_name(dtype), count);
      std::vector<double> want(static_cast<size_t>(count)), mine(static_cast<size_t>(count), 0);
      for (int64_t i = 0; i < count; ++i) want[i] = dtype == DataType::kBool ? i % 2 : 7 + i % 50;
      if (g.rank == root) mine = want;
      DeviceBuffer buf(static_cast<size_t>(count * element_size(dtype)));
      TensorView t = g.upload(buf, dtype, {count}, mine);
      if (!g.finished(name, g.rt.broadcast(name, t, root))) continue;
      g.expect_values(name, dtype, g.download(t.data, dtype, count), want);
    }
  }
}

void check_alltoall_reducescatter_barrier(GpuContext& g) {
  const int64_t cols = 2;
  for (DataType dtype : {DataType::kInt32, DataType::kFloat32}) {
    // Rank r sends k + 1 rows to rank k, valued 10 * r + k.
    std::vector<int32_t> splits;
    std::vector<double> mine, want;
    for (int k = 0; k < g.size; ++k) {
      splits.push_back(k + 1);
      for (int64_t i = 0; i < (k + 1) * cols; ++i) mine.push_back(10 * g.rank + k);
    }
    for (int r = 0; r < g.size; ++r) {
      for (int64_t i = 0; i < (g.rank + 1) * cols; ++i) want.push_back(10 * r + g.rank);
    }
    const std::string name = fmt::format("a2a.{}", dtype_name(dtype));
    DeviceBuffer buf(mine.size() * element_size(dtype));
    CollectiveArgs a;
    a.type = RequestType::kAlltoall;
    a.name = name;
    a.input = g.upload(buf, dtype, {static_cast<int64_t>(mine.size()) / cols, cols}, mine);
    a.splits = splits;
    a.allocator = g.device_allocator(dtype);
    Result<Handle> h = g.rt.enqueue(std::move(a));
    if (!g.finished(name, h)) continue;
    Result<OpOutput> out = g.rt.output(*h);
    if (!MPI_CHECK(g.c, out.is_ok(), "{}: output", name)) continue;
    MPI_CHECK(g.c, out->received_splits == std::vector<int32_t>(g.size, g.rank + 1), "{}: received splits", name);
    g.expect_values(name, dtype, g.download(out->data, dtype, static_cast<int64_t>(want.size())), want);
    g.rt.release(*h);
  }
  for (DataType dtype : {DataType::kInt32, DataType::kBFloat16, DataType::kFloat32}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage}) {
      for (int64_t dim0 : {int64_t{2} * g.size, int64_t{2} * g.size + 1}) {  // even: ncclReduceScatter; uneven
        const int64_t cols4 = 4;
        const std::string name = fmt::format("rs.{}.{}.{}", dtype_name(dtype), reduce_op_name(op), dim0);
        std::vector<double> mine;
        for (int64_t row = 0; row < dim0; ++row) mine.insert(mine.end(), cols4, (g.rank + 1) + row % 5);
        const std::vector<int64_t> rows = reducescatter_rows(dim0, g.size);
        int64_t first = 0;
        for (int r = 0; r < g.rank; ++r) first += rows[r];
        std::vector<double> want;
        for (int64_t row = first; row < first + rows[g.rank]; ++row) {
          const double sum = g.size * (g.size + 1) / 2.0 + g.size * static_cast<double>(row % 5);
          want.insert(want.end(), cols4, op == ReduceOp::kSum ? sum : is_floating(dtype) ? sum / g.size
                                                                                          : std::floor(sum / g.size));
        }
        DeviceBuffer buf(mine.size() * element_size(dtype));
        CollectiveArgs a;
        a.type = RequestType::kReducescatter;
        a.name = name;
        a.op = op;
        a.input = g.upload(buf, dtype, {dim0, cols4}, mine);
        a.allocator = g.device_allocator(dtype);
        Result<Handle> h = g.rt.enqueue(std::move(a));
        if (!g.finished(name, h)) continue;
        Result<OpOutput> out = g.rt.output(*h);
        if (!MPI_CHECK(g.c, out.is_ok(), "{}: output", name)) continue;
        g.expect_values(name, dtype, g.download(out->data, dtype, static_cast<int64_t>(want.size())), want);
        g.rt.release(*h);
      }
    }
  }
  g.finished("barrier", g.rt.barrier());
}

}  // namespace korovod::gputest
