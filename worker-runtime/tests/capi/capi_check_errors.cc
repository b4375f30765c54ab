// rt_capi_check's error, process-set and join checks: what ranks disagreeing does (an error on
// every rank, the runtime usable after), a duplicate name on one rank, sets of some ranks, and
// Horovod's join rule.
#include <fmt/ranges.h>

#include <algorithm>
#include <vector>

#include "capi/dlpack.h"
#include "capi_check.h"

namespace korovod::capi_check {

void check_errors(korovod_runtime* rt, Checker& c) {
  const int rank = korovod_rank(rt), size = korovod_size(rt);
  // Shapes differ: KOROVOD_ERR_PRECONDITION on every rank, naming the tensor.
  std::vector<float> x(rank + 1, 1.f);
  Op shape_mismatch;
  shape_mismatch.name = "mismatch.shape";
  shape_mismatch.input = x.data();
  shape_mismatch.shape = {rank + 1};
  Outcome o = run(rt, shape_mismatch);
  c.check(o.code == KOROVOD_ERR_PRECONDITION &&
              o.error.find("Mismatched shapes for tensor 'mismatch.shape'") != std::string::npos,
          "shape mismatch: code {} '{}'", o.code, o.error);
  // Dtypes differ (rank 0 sends int32).
  std::vector<int32_t> ints(2, 1);
  std::vector<float> two(2, 1.f);
  Op dtype_mismatch;
  dtype_mismatch.name = "mismatch.dtype";
  dtype_mismatch.input = rank == 0 ? static_cast<void*>(ints.data()) : static_cast<void*>(two.data());
  dtype_mismatch.dtype = rank == 0 ? KOROVOD_INT32 : KOROVOD_FLOAT32;
  dtype_mismatch.shape = {2};
  o = run(rt, dtype_mismatch);
  c.check(o.code == KOROVOD_ERR_PRECONDITION && o.error.find("Mismatched data types") != std::string::npos,
          "dtype mismatch: code {} '{}'", o.code, o.error);
  // Broadcast roots differ.
  Op roots;
  roots.type = KOROVOD_OP_BROADCAST;
  roots.name = "mismatch.root";
  roots.input = two.data();
  roots.shape = {2};
  roots.root_rank = rank == 0 ? 0 : size - 1;
  o = run(rt, roots);
  c.check(o.code == KOROVOD_ERR_PRECONDITION && o.error.find("Mismatched root ranks") != std::string::npos,
          "root mismatch: code {} '{}'", o.code, o.error);

  // A duplicate name on rank 0 while its first "dup" waits for the others: refused on rank 0
  // (from enqueue or from wait) with KOROVOD_ERR_INVALID_ARGUMENT; the others only submit "dup"
  // after the barrier that rank 0 joins once it has tried the duplicate.
  std::vector<float> d(4, static_cast<float>(rank + 1)), d2(4, 0.f);
  Op dup;
  dup.name = "dup";
  dup.input = d.data();
  dup.shape = {4};
  int64_t first = 0;
  if (rank == 0) {
    first = dup.enqueue(rt);
    Op again = dup;
    again.input = d2.data();
    const int64_t second = again.enqueue(rt);
    const int code = second < 0 ? static_cast<int>(second) : korovod_wait(rt, second);
    const std::string text = second < 0 ? korovod_last_error(rt) : korovod_handle_error(rt, second);
    c.check(code == KOROVOD_ERR_INVALID_ARGUMENT && text.find("DUPLICATE_NAME_ERROR") != std::string::npos,
            "duplicate name: code {} '{}'", code, text);
    if (second > 0) korovod_release(rt, second);
  }
  o = run(rt, [] { Op b; b.type = KOROVOD_OP_BARRIER; return b; }());
  c.check(o.code == KOROVOD_OK, "barrier after duplicate: {}", o.error);
  if (rank != 0) first = dup.enqueue(rt);
  const int dup_code = first > 0 ? korovod_wait(rt, first) : static_cast<int>(first);
  c.check(dup_code == KOROVOD_OK && d[0] == size * (size + 1) / 2.f, "first 'dup' after the duplicate: {} {}",
          dup_code, d[0]);
  if (first > 0) korovod_release(rt, first);
  // Still usable.
  std::vector<float> after(2, 1.f);
  Op ok;
  ok.name = "after.errors";
  ok.input = after.data();
  ok.shape = {2};
  o = run(rt, ok);
  c.check(o.code == KOROVOD_OK && after[0] == static_cast<float>(size), "allreduce after errors: {}", o.error);
}

// Static sets from init: set 1 = {size-1}, set 2 = {0, size-1} (size >= 3); a dynamic set {0}.
void check_process_sets(korovod_runtime* rt, Checker& c, int static_sets) {
  const int rank = korovod_rank(rt), size = korovod_size(rt);
  int ids[8] = {};
  const int n = korovod_process_set_ids(rt, ids, 8);
  c.check(n == 1 + static_sets, "process set ids: {} sets", n);
  int ranks[8] = {};
  c.check(korovod_process_set_ranks(rt, 1, ranks, 8) == 1 && ranks[0] == size - 1, "set 1 ranks");
  c.check(korovod_process_set_included(rt, 1) == (rank == size - 1 ? 1 : 0), "set 1 included");
  c.check(korovod_process_set_rank(rt, 1) == (rank == size - 1 ? 0 : -1), "set 1 rank");
  std::vector<float> x(3, static_cast<float>(rank + 1));
  Op op;
  op.name = "in.set1";
  op.input = x.data();
  op.shape = {3};
  op.process_set = 1;
  Outcome o = run(rt, op);
  if (rank == size - 1) {
    c.check(o.code == KOROVOD_OK && x[0] == size, "allreduce in set 1: {}", o.error);
  } else {
    c.check(o.code == KOROVOD_ERR_INVALID_ARGUMENT && o.error.find("not in process set 1") != std::string::npos,
            "allreduce outside set 1: code {} '{}'", o.code, o.error);
  }
  if (static_sets >= 2) {
    c.check(korovod_process_set_size(rt, 2) == 2, "set 2 size");
    if (rank == 0 || rank == size - 1) {
      std::vector<float> y(2, static_cast<float>(rank));
      Op in2 = op;
      in2.name = "in.set2";
      in2.input = y.data();
      in2.shape = {2};
      in2.process_set = 2;
      o = run(rt, in2);
      c.check(o.code == KOROVOD_OK && y[0] == size - 1, "allreduce in set 2: {} {}", y[0], o.error);
    }
  }
  // Dynamic: every rank adds {0} in the same order, rank 0 reduces in it, all remove it.
  const int zero[] = {0};
  const int id = korovod_add_process_set(rt, zero, 1);
  if (!c.check(id > static_sets, "add_process_set: {} {}", id, korovod_last_error(rt))) return;
  c.check(korovod_process_set_size(rt, id) == 1, "dynamic set size");
  if (rank == 0) {
    std::vector<float> z(2, 5.f);
    Op dyn = op;
    dyn.name = "in.dynamic";
    dyn.input = z.data();
    dyn.shape = {2};
    dyn.process_set = id;
    o = run(rt, dyn);
    c.check(o.code == KOROVOD_OK && z[0] == 5.f, "allreduce in dynamic set: {}", o.error);
  }
  c.check(korovod_remove_process_set(rt, id) == KOROVOD_OK, "remove_process_set: {}", korovod_last_error(rt));
  c.check(korovod_process_set_size(rt, id) == KOROVOD_ERR_INVALID_ARGUMENT, "removed set still answers");
}

// The last rank joins first; the others' allgather and broadcast must fail naming it (Horovod's
// test_horovod_join_allgather / _broadcast), their allreduce runs with it contributing zeros.
void check_join_rule(korovod_runtime* rt, Checker& c) {
  const int rank = korovod_rank(rt), size = korovod_size(rt);
  const std::string joined = fmt::format("ranks [{}] have joined", size - 1);
  int64_t hj = 0;
  if (rank == size - 1) {
    hj = korovod_join(rt, -1);
  } else {
    std::vector<float> x(2, static_cast<float>(rank + 1));
    Op ag;
    ag.type = KOROVOD_OP_ALLGATHER;
    ag.name = "joined.ag";
    ag.input = x.data();
    ag.shape = {2};
    Outcome o = run(rt, ag);
    c.check(o.code == KOROVOD_ERR_PRECONDITION && o.error.find(joined) != std::string::npos,
            "allgather while joined: code {} '{}'", o.code, o.error);
    Op bc;
    bc.type = KOROVOD_OP_BROADCAST;
    bc.name = "joined.bc";
    bc.input = x.data();
    bc.shape = {2};
    o = run(rt, bc);
    c.check(o.code == KOROVOD_ERR_PRECONDITION && o.error.find(joined) != std::string::npos,
            "broadcast while joined: code {} '{}'", o.code, o.error);
    Op ar;
    ar.name = "joined.ar";
    ar.input = x.data();
    ar.shape = {2};
    o = run(rt, ar);
    c.check(o.code == KOROVOD_OK && x[0] == (size - 1) * size / 2.f, "allreduce while joined: {} {}", x[0], o.error);
    hj = korovod_join(rt, -1);
  }
  const int code = hj > 0 ? korovod_wait(rt, hj) : static_cast<int>(hj);
  const int last = code == KOROVOD_OK ? korovod_handle_last_joined_rank(rt, hj) : -1;
  if (hj > 0) korovod_release(rt, hj);
  c.check(code == KOROVOD_OK && last >= 0 && last < size - 1, "join: code {} last joined {}", code, last);
  // The same last rank on every rank.
  std::vector<int32_t> mine = {last}, all(size, -2);
  Op gather;
  gather.type = KOROVOD_OP_ALLGATHER;
  gather.name = "joined.last";
  gather.input = mine.data();
  gather.dtype = KOROVOD_INT32;
  gather.shape = {1};
  Outcome o = run(rt, gather, false);
  std::vector<int64_t> shape;
  if (o.code == KOROVOD_OK) all = take_output<int32_t>(rt, o.handle, dlpack::kDLInt, &shape, c);
  c.check(std::count(all.begin(), all.end(), last) == size, "last joined rank per rank: [{}]", fmt::join(all, ","));
}

}  // namespace korovod::capi_check
