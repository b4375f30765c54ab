// rt_capi_check's operation checks: values that depend on the rank, so a result from the wrong
// rank, offset or dtype shows.
#include <fmt/ranges.h>

#include <cstring>
#include <numeric>

#include "capi/dlpack.h"
#include "capi_check.h"

namespace korovod::capi_check {

namespace dl = korovod::dlpack;

int64_t Op::enqueue(korovod_runtime* rt) const {
  return korovod_enqueue(rt, type, name.empty() ? nullptr : name.c_str(), input, output, dtype,
                         static_cast<int>(shape.size()), shape.data(), -1, op, prescale, postscale, root_rank,
                         splits.empty() ? nullptr : splits.data(), static_cast<int>(splits.size()), process_set,
                         nullptr);
}

int Op::add_to(korovod_group* group) const {
  return korovod_group_add(group, type, name.empty() ? nullptr : name.c_str(), input, output, dtype,
                           static_cast<int>(shape.size()), shape.data(), -1, op, prescale, postscale, root_rank,
                           splits.empty() ? nullptr : splits.data(), static_cast<int>(splits.size()), process_set,
                           nullptr);
}

Outcome run(korovod_runtime* rt, const Op& op, bool release) {
  Outcome o;
  o.handle = op.enqueue(rt);
  if (o.handle <= 0) {
    o.code = static_cast<int>(o.handle);
    o.error = korovod_last_error(rt);
    return o;
  }
  o.code = korovod_wait(rt, o.handle);
  if (o.code != KOROVOD_OK) o.error = korovod_handle_error(rt, o.handle);
  if (release) korovod_release(rt, o.handle);
  return o;
}

template <typename T>
std::vector<T> take_output(korovod_runtime* rt, int64_t handle, int dl_code, std::vector<int64_t>* shape, Checker& c) {
  auto* m = static_cast<dl::ManagedTensor*>(korovod_handle_take_dlpack(rt, handle, dl_code, 8 * sizeof(T)));
  korovod_release(rt, handle);
  if (!c.check(m != nullptr, "take_dlpack: {}", korovod_last_error(rt))) return {};
  const dl::Tensor& t = m->dl_tensor;
  c.check(t.device.device_type == dl::kDLCPU && t.dtype.code == dl_code && t.dtype.bits == 8 * sizeof(T) &&
              t.dtype.lanes == 1 && t.strides == nullptr && t.byte_offset == 0,
          "DLPack fields: device {} code {} bits {}", static_cast<int>(t.device.device_type), t.dtype.code,
          t.dtype.bits);
  shape->assign(t.shape, t.shape + t.ndim);
  const int64_t n = std::accumulate(shape->begin(), shape->end(), int64_t{1}, std::multiplies<>());
  std::vector<T> values(static_cast<const T*>(t.data), static_cast<const T*>(t.data) + n);
  m->deleter(m);
  return values;
}

template std::vector<float> take_output<float>(korovod_runtime*, int64_t, int, std::vector<int64_t>*, Checker&);
template std::vector<int32_t> take_output<int32_t>(korovod_runtime*, int64_t, int, std::vector<int64_t>*, Checker&);

namespace {

template <typename T>
void check_sum(korovod_runtime* rt, Checker& c, int dtype, const char* what) {
  const int rank = korovod_rank(rt), size = korovod_size(rt);
  std::vector<T> in(5), out(5);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<T>((rank + 1) * (i + 1));
  Op op;
  op.name = fmt::format("sum.{}", what);
  op.input = in.data();
  op.output = out.data();
  op.dtype = dtype;
  op.shape = {5};
  Outcome o = run(rt, op);
  const int total = size * (size + 1) / 2;
  bool ok = o.code == KOROVOD_OK;
  for (size_t i = 0; ok && i < out.size(); ++i) ok = out[i] == static_cast<T>(total * (i + 1));
  c.check(ok, "allreduce SUM {}: code {} {}", what, o.code, o.error);
}

}  // namespace

void check_allreduce(korovod_runtime* rt, Checker& c) {
  check_sum<int32_t>(rt, c, KOROVOD_INT32, "int32");
  check_sum<int64_t>(rt, c, KOROVOD_INT64, "int64");
  check_sum<float>(rt, c, KOROVOD_FLOAT32, "float32");
  check_sum<double>(rt, c, KOROVOD_FLOAT64, "float64");
  check_sum<int8_t>(rt, c, KOROVOD_INT8, "int8");
  const int rank = korovod_rank(rt), size = korovod_size(rt);
  // Average, min, max in place (output NULL), with Horovod's scaling.
  const struct { int op; float expect; } cases[] = {
      {KOROVOD_AVERAGE, (size + 1) / 2.f}, {KOROVOD_MIN, 1.f}, {KOROVOD_MAX, static_cast<float>(size)}};
  for (const auto& k : cases) {
    std::vector<float> x(3, static_cast<float>(rank + 1));
    Op op;
    op.name = fmt::format("inplace.{}", k.op);
    op.input = x.data();
    op.shape = {3};
    op.op = k.op;
    op.postscale = 2.0;
    Outcome o = run(rt, op);
    c.check(o.code == KOROVOD_OK && x[2] == 2 * k.expect, "allreduce op {} in place: {} (want {}) {}", k.op, x[2],
            2 * k.expect, o.error);
  }
}

void check_allgather_broadcast_alltoall_reducescatter(korovod_runtime* rt, Checker& c) {
  const int rank = korovod_rank(rt), size = korovod_size(rt);
  // Allgather: rank r gives r + 1 rows of [10r, 10r + 1].
  std::vector<float> rows;
  for (int i = 0; i <= rank; ++i) rows.insert(rows.end(), {10.f * rank, 10.f * rank + 1});
  Op ag;
  ag.type = KOROVOD_OP_ALLGATHER;
  ag.name = "ag";
  ag.input = rows.data();
  ag.shape = {rank + 1, 2};
  Outcome o = run(rt, ag, false);
  std::vector<int64_t> shape;
  std::vector<float> got = o.code == KOROVOD_OK ? take_output<float>(rt, o.handle, dl::kDLFloat, &shape, c)
                                                : std::vector<float>{};
  std::vector<float> want;
  for (int r = 0; r < size; ++r) {
    for (int i = 0; i <= r; ++i) want.insert(want.end(), {10.f * r, 10.f * r + 1});
  }
  c.check(got == want && shape == std::vector<int64_t>{size * (size + 1) / 2, 2}, "allgather: [{}] shape [{}] {}",
          fmt::join(got, ","), fmt::join(shape, ","), o.error);

  // Broadcast from the last rank.
  std::vector<float> b(4, static_cast<float>(rank));
  Op bc;
  bc.type = KOROVOD_OP_BROADCAST;
  bc.name = "bc";
  bc.input = b.data();
  bc.shape = {4};
  bc.root_rank = size - 1;
  o = run(rt, bc);
  c.check(o.code == KOROVOD_OK && b == std::vector<float>(4, static_cast<float>(size - 1)), "broadcast: {} {}", b[0],
          o.error);

  // Alltoall: rank r sends j + 1 rows of 100r + j to rank j.
  std::vector<int32_t> send;
  std::vector<int32_t> splits;
  for (int j = 0; j < size; ++j) {
    splits.push_back(j + 1);
    send.insert(send.end(), j + 1, 100 * rank + j);
  }
  Op a2a;
  a2a.type = KOROVOD_OP_ALLTOALL;
  a2a.name = "a2a";
  a2a.input = send.data();
  a2a.dtype = KOROVOD_INT32;
  a2a.shape = {static_cast<int64_t>(send.size())};
  a2a.splits = splits;
  o = run(rt, a2a, false);
  std::vector<int32_t> received(size, -1);
  const int nsplits = o.code == KOROVOD_OK ? korovod_handle_received_splits(rt, o.handle, received.data(), size) : -1;
  std::vector<int32_t> a2a_out =
      o.code == KOROVOD_OK ? take_output<int32_t>(rt, o.handle, dl::kDLInt, &shape, c) : std::vector<int32_t>{};
  std::vector<int32_t> a2a_want;
  for (int s = 0; s < size; ++s) a2a_want.insert(a2a_want.end(), rank + 1, 100 * s + rank);
  c.check(nsplits == size && received == std::vector<int32_t>(size, rank + 1) && a2a_out == a2a_want,
          "alltoall: splits [{}] out [{}] {}", fmt::join(received, ","), fmt::join(a2a_out, ","), o.error);

  // Reducescatter of 2 * size + 1 rows: rank 0 gets the extra row.
  std::vector<float> rs(2 * size + 1, static_cast<float>(rank + 1));
  Op r;
  r.type = KOROVOD_OP_REDUCESCATTER;
  r.name = "rs";
  r.input = rs.data();
  r.shape = {static_cast<int64_t>(rs.size())};
  r.op = KOROVOD_AVERAGE;
  o = run(rt, r, false);
  got = o.code == KOROVOD_OK ? take_output<float>(rt, o.handle, dl::kDLFloat, &shape, c) : std::vector<float>{};
  const float avg = (size + 1) / 2.f;
  c.check(got == std::vector<float>(rank == 0 ? 3 : 2, avg), "reducescatter: [{}] {}", fmt::join(got, ","), o.error);

  Op barrier;
  barrier.type = KOROVOD_OP_BARRIER;
  o = run(rt, barrier);
  c.check(o.code == KOROVOD_OK, "barrier: {}", o.error);
}

void check_groups(korovod_runtime* rt, Checker& c) {
  const int rank = korovod_rank(rt), size = korovod_size(rt);
  // Grouped allgather of two tensors and a reducescatter, queued in one step.
  std::vector<float> a(2 * (rank + 1), static_cast<float>(rank)), b(3, static_cast<float>(-rank));
  std::vector<float> r(size * 2, 1.f);
  korovod_group* g = korovod_group_new();
  Op ga;
  ga.type = KOROVOD_OP_ALLGATHER;
  ga.name = "grouped.a";
  ga.input = a.data();
  ga.shape = {rank + 1, 2};
  Op gb = ga;
  gb.name = "grouped.b";
  gb.input = b.data();
  gb.shape = {1, 3};
  Op gr;
  gr.type = KOROVOD_OP_REDUCESCATTER;
  gr.name = "grouped.r";
  gr.input = r.data();
  gr.shape = {size * 2};
  gr.op = KOROVOD_SUM;
  c.check(ga.add_to(g) == 0 && gb.add_to(g) == 0 && gr.add_to(g) == 0, "group add");
  int64_t h[3] = {};
  const int rc = korovod_group_enqueue(rt, g, h, 3);
  korovod_group_free(g);
  if (!c.check(rc == KOROVOD_OK, "group enqueue: {}", korovod_last_error(rt))) return;
  for (int64_t hh : h) c.check(korovod_wait(rt, hh) == KOROVOD_OK, "grouped op: {}", korovod_handle_error(rt, hh));
  std::vector<int64_t> shape;
  std::vector<float> got = take_output<float>(rt, h[0], dl::kDLFloat, &shape, c);
  c.check(shape == std::vector<int64_t>{size * (size + 1) / 2, 2} && got.back() == static_cast<float>(size - 1),
          "grouped allgather a: shape [{}]", fmt::join(shape, ","));
  got = take_output<float>(rt, h[1], dl::kDLFloat, &shape, c);
  c.check(shape == std::vector<int64_t>{size, 3} && got.back() == static_cast<float>(1 - size),
          "grouped allgather b: shape [{}]", fmt::join(shape, ","));
  got = take_output<float>(rt, h[2], dl::kDLFloat, &shape, c);
  c.check(got == std::vector<float>(2, static_cast<float>(size)), "grouped reducescatter: [{}]", fmt::join(got, ","));
  // The legacy grouped allreduce with prescale.
  std::vector<float> p(2, 1.f), q(1, static_cast<float>(rank));
  const int64_t ps[] = {2}, qs[] = {1};
  korovod_tensor ins[] = {{p.data(), KOROVOD_FLOAT32, 1, ps, -1}, {q.data(), KOROVOD_FLOAT32, 1, qs, -1}};
  const char* names[] = {"gar.p", "gar.q"};
  int64_t hs[2] = {};
  if (c.check(korovod_grouped_allreduce(rt, names, ins, ins, 2, KOROVOD_SUM, 3.0, 1.0, 0, hs) == 0, "grouped_allreduce")) {
    for (int64_t hh : hs) c.check(korovod_wait(rt, hh) == KOROVOD_OK, "grouped allreduce op");
    c.check(p[0] == 3.f * size && q[0] == 3.f * (size * (size - 1) / 2), "grouped allreduce values {} {}", p[0], q[0]);
  }
}

void* gather_for_later(korovod_runtime* rt, Checker& c, std::vector<float>* expect) {
  const int rank = korovod_rank(rt), size = korovod_size(rt);
  std::vector<float> mine(3, static_cast<float>(rank) + 0.5f);
  Op ag;
  ag.type = KOROVOD_OP_ALLGATHER;
  ag.name = "kept";
  ag.input = mine.data();
  ag.shape = {3};
  Outcome o = run(rt, ag, false);
  if (!c.check(o.code == KOROVOD_OK, "kept allgather: {}", o.error)) return nullptr;
  void* m = korovod_handle_take_dlpack(rt, o.handle, dl::kDLFloat, 32);
  korovod_release(rt, o.handle);
  expect->clear();
  for (int r = 0; r < size; ++r) expect->insert(expect->end(), 3, static_cast<float>(r) + 0.5f);
  c.check(m != nullptr, "kept take: {}", korovod_last_error(rt));
  return m;
}

void check_later(void* managed, const std::vector<float>& expect, Checker& c) {
  if (!managed) return;
  auto* m = static_cast<dl::ManagedTensor*>(managed);
  const float* data = static_cast<const float*>(m->dl_tensor.data);
  const std::vector<float> got(data, data + m->dl_tensor.shape[0]);
  c.check(got == expect, "DLPack output after destroy: [{}]", fmt::join(got, ","));
  korovod_dlpack_delete(m);
}

}  // namespace korovod::capi_check
