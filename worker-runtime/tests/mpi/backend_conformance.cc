#include "backend_conformance.h"

#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <thread>

#include "kernels/kernels.h"
#include "kernels/testing/dtype_values.h"
#include "transport/mpi/mpi_providers.h"

namespace korovod::mpitest {

BackendPair make_backends(BackendProvider& under_test, const std::shared_ptr<mpi::MpiContext>& ctx, int set_id,
                          int size) {
  std::vector<int> ranks(size);
  for (int i = 0; i < size; ++i) ranks[i] = i;
  mpi::MpiBackendProvider mpi_provider(ctx);
  BackendPair b;
  auto u = under_test.create_backend(ranks, set_id);
  auto m = mpi_provider.create_backend(ranks, set_id);
  if (u.is_ok()) b.under_test = std::move(u).value();
  else b.error = u.status().to_string();
  if (m.is_ok()) b.reference = std::move(m).value();
  else b.error += (b.error.empty() ? "MPI: " : "; MPI: ") + m.status().to_string();
  return b;
}

Bytes input(DataType t, ReduceOp op, int rank, int64_t n, int salt) {
  Bytes b(static_cast<size_t>(std::max<int64_t>(1, n * element_size(t))));
  for (int64_t i = 0; i < n; ++i) {
    double v = t == DataType::kBool ? (rank + i + salt) % 2
               : op == ReduceOp::kProduct ? 1 + (rank + i) % 2
                                          : rank + 1 + (i + salt) % 3;
    testing::store(t, b.data(), i, v);
  }
  return b;
}

// Compares each rank's bytes with rank 0's.
bool same_everywhere(const Bytes& b) {
  int len = static_cast<int>(b.size());
  Bytes root = b;
  MPI_Bcast(root.data(), len, MPI_BYTE, 0, MPI_COMM_WORLD);
  int mine = root == b, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return all != 0;
}

MpiSession::MpiSession(int& argc, char**& argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  Result<std::shared_ptr<mpi::MpiContext>> ctx = mpi::MpiContext::create(nullptr, false);
  if (ctx.is_ok()) ctx_ = std::move(ctx).value();
}

MpiSession::~MpiSession() {
  ctx_.reset();
  MPI_Finalize();
}

int verdict(const Checker& c, const std::string& title) {
  int failures = c.failures(), total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (c.rank() == 0) fmt::print("{}: {}\n", title, total == 0 ? "all checks passed" : "FAILED");
  return total == 0 ? 0 : 1;
}

namespace {

// reducescatter of `in` (n elements) with uneven counts, the last rank possibly getting nothing.
void check_reducescatter(Backend& under_test, Backend& reference, Checker& c, const Bytes& in, int64_t n,
                         DataType t, ReduceOp op, int rank, int size) {
  std::vector<int64_t> counts(size);
  int64_t given = 0;
  for (int r = 0; r < size; ++r) given += counts[r] = r == size - 1 ? n - given : n / size + (r == 0);
  if (counts[size - 1] < 0) return;
  Bytes want(static_cast<size_t>(std::max<int64_t>(1, counts[rank] * element_size(t)))), got = want;
  Status sr = reference.reducescatter(in.data(), want.data(), counts, t, op);
  Status su = under_test.reducescatter(in.data(), got.data(), counts, t, op);
  MPI_CHECK(c, sr.is_ok() && su.is_ok() && got == want, "{} reducescatter {} {} n={}: {} (MPI: {})",
            under_test.name(), dtype_name(t), reduce_op_name(op), n, su.to_string(), sr.to_string());
}

}  // namespace

void check_reductions(Backend& under_test, Backend& reference, Checker& c, const SizesFor& sizes_for, int rank,
                      int size) {
  constexpr DataType kTypes[] = {DataType::kUInt8,   DataType::kInt8,    DataType::kUInt16, DataType::kInt16,
                                 DataType::kInt32,   DataType::kInt64,   DataType::kFloat16, DataType::kFloat32,
                                 DataType::kFloat64, DataType::kBool,    DataType::kBFloat16};
  constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct};
  const std::string name = under_test.name();
  for (DataType t : kTypes) {
    for (ReduceOp op : kOps) {
      for (int64_t n : sizes_for(t)) {
        Bytes in = input(t, op, rank, n), want(in.size()), got(in.size()), inplace = in;
        Status sr = reference.allreduce(in.data(), want.data(), n, t, op);
        Status su = under_test.allreduce(in.data(), got.data(), n, t, op);
        Status si = under_test.allreduce(inplace.data(), inplace.data(), n, t, op);
        MPI_CHECK(c, sr.is_ok() && su.is_ok() && si.is_ok(), "{} allreduce {} {} n={}: {} {} (MPI: {})", name,
                  dtype_name(t), reduce_op_name(op), n, su.to_string(), si.to_string(), sr.to_string());
        MPI_CHECK(c, got == want && inplace == want, "{} allreduce {} {} n={}: differs from MPI", name, dtype_name(t),
                  reduce_op_name(op), n);
        MPI_CHECK(c, same_everywhere(got), "{} allreduce {} {} n={}: ranks differ", name, dtype_name(t),
                  reduce_op_name(op), n);
        check_reducescatter(under_test, reference, c, in, n, t, op, rank, size);
      }
    }
  }
}

void check_allreduce_many(Backend& under_test, Backend& reference, Checker& c, const std::vector<int64_t>& counts,
                          int rank) {
  constexpr DataType kTypes[] = {DataType::kUInt8, DataType::kInt32,   DataType::kInt64,   DataType::kFloat16,
                                 DataType::kFloat32, DataType::kFloat64, DataType::kBool, DataType::kBFloat16};
  constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct};
  const std::string name = under_test.name();
  if (!MPI_CHECK(c, under_test.allreduce_many_offered(), "{} does not offer allreduce_many", name)) return;
  const size_t n = counts.size();
  for (DataType t : kTypes) {
    for (ReduceOp op : kOps) {
      for (double post : {1.0, 0.5}) {
        std::vector<Bytes> in(n), want(n), got(n), inplace(n);
        std::vector<const void*> sends(n), inplace_sends(n);
        std::vector<void*> recvs(n), inplace_recvs(n);
        bool ref_ok = true;
        for (size_t i = 0; i < n; ++i) {
          in[i] = input(t, op, rank, counts[i], static_cast<int>(i));
          want[i] = got[i] = Bytes(in[i].size());
          inplace[i] = in[i];
          ref_ok = reference.allreduce(in[i].data(), want[i].data(), counts[i], t, op).is_ok() && ref_ok;
          if (post != 1.0) kernels::scale(t, want[i].data(), counts[i], post);
          sends[i] = in[i].data();
          recvs[i] = got[i].data();
          inplace_sends[i] = inplace_recvs[i] = inplace[i].data();
        }
        Status su = under_test.allreduce_many(sends, recvs, counts, t, op, post);
        Status si = under_test.allreduce_many(inplace_sends, inplace_recvs, counts, t, op, post);
        const std::string what = fmt::format("{} allreduce_many {} {} postscale {} of {} tensors", name,
                                             dtype_name(t), reduce_op_name(op), post, n);
        MPI_CHECK(c, ref_ok && su.is_ok() && si.is_ok(), "{}: {} {}", what, su.to_string(), si.to_string());
        bool equal = true, same = true;
        for (size_t i = 0; i < n; ++i) {
          equal = equal && got[i] == want[i] && inplace[i] == want[i];
          same = same_everywhere(got[i]) && same;
        }
        MPI_CHECK(c, equal, "{}: differs from MPI's allreduce of each tensor", what);
        MPI_CHECK(c, same, "{}: ranks differ", what);
      }
    }
  }
}

void check_copies(Backend& under_test, Backend& reference, Checker& c, const std::vector<int64_t>& sizes, int rank,
                  int size) {
  const std::string name = under_test.name();
  for (int64_t n : sizes) {
    // allgatherv: rank r contributes n + r * 3 bytes (alternate ranks none when n == 0).
    std::vector<int64_t> recv_bytes(size);
    for (int r = 0; r < size; ++r) recv_bytes[r] = n == 0 ? (r % 2) * 5 : n + r * 3;
    int64_t total = 0;
    for (int64_t x : recv_bytes) total += x;
    Bytes mine = input(DataType::kUInt8, ReduceOp::kSum, rank, recv_bytes[rank], 1);
    Bytes want(static_cast<size_t>(total + 1)), got = want;
    Status sr = reference.allgatherv(mine.data(), recv_bytes[rank], want.data(), recv_bytes);
    Status su = under_test.allgatherv(mine.data(), recv_bytes[rank], got.data(), recv_bytes);
    MPI_CHECK(c, sr.is_ok() && su.is_ok() && got == want, "{} allgatherv n={}: {}", name, n, su.to_string());
    // broadcast from every root.
    for (int root = 0; root < size; ++root) {
      Bytes buf = input(DataType::kUInt8, ReduceOp::kSum, rank, n, root);
      Bytes ref = input(DataType::kUInt8, ReduceOp::kSum, root, n, root);
      Status sb = under_test.broadcast(buf.data(), n, root);
      MPI_CHECK(c, sb.is_ok() && buf == ref, "{} broadcast n={} root={}: {}", name, n, root, sb.to_string());
    }
    // alltoallv: rank r sends (n + r + 2 * j) bytes to rank j (and none to itself when n == 0).
    std::vector<int64_t> sbytes(size), rbytes(size);
    for (int j = 0; j < size; ++j) {
      sbytes[j] = n == 0 && j == rank ? 0 : n + rank + 2 * j;
      rbytes[j] = n == 0 && j == rank ? 0 : n + j + 2 * rank;
    }
    int64_t stotal = 0, rtotal = 0;
    for (int j = 0; j < size; ++j) stotal += sbytes[j], rtotal += rbytes[j];
    Bytes send = input(DataType::kUInt8, ReduceOp::kSum, rank, stotal, 2);
    Bytes awant(static_cast<size_t>(rtotal + 1)), agot = awant;
    Status ar = reference.alltoallv(send.data(), sbytes, awant.data(), rbytes);
    Status au = under_test.alltoallv(send.data(), sbytes, agot.data(), rbytes);
    MPI_CHECK(c, ar.is_ok() && au.is_ok() && agot == awant, "{} alltoallv n={}: {}", name, n, au.to_string());
    Status sb = under_test.barrier();
    MPI_CHECK(c, sb.is_ok(), "{} barrier after n={}: {}", name, n, sb.to_string());
  }
}

void check_large_allreduce(Backend& under_test, Backend& reference, Checker& c, int64_t n, int rank,
                           const std::string& what) {
  Bytes in = input(DataType::kFloat32, ReduceOp::kSum, rank, n), want(in.size()), got(in.size());
  Status sr = reference.allreduce(in.data(), want.data(), n, DataType::kFloat32, ReduceOp::kSum);
  Status su = under_test.allreduce(in.data(), got.data(), n, DataType::kFloat32, ReduceOp::kSum);
  MPI_CHECK(c, sr.is_ok() && su.is_ok() && got == want, "{} {} allreduce float32 sum n={}: {}", under_test.name(),
            what, n, su.to_string());
  MPI_CHECK(c, same_everywhere(got), "{} {} allreduce float32 sum n={}: ranks differ", under_test.name(), what, n);
}

void run_crash_loop(Backend& b, int rank, int victim, const CrashExpectation& expect) {
  std::vector<float> x(4 << 20, 1.f);
  if (rank == victim) {
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      raise(SIGKILL);
    }).detach();
  }
  for (int i = 0;; ++i) {
    auto start = std::chrono::steady_clock::now();
    Status s = b.allreduce(x.data(), x.data(), static_cast<int64_t>(x.size()), DataType::kFloat32, ReduceOp::kMax);
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!s.is_ok()) {
      const bool in_time = took < expect.bound_seconds;
      const bool named = !expect.names_victim || expect.names_victim(s, victim);
      const char* verdict = !in_time ? "SLOW" : !named ? "BAD" : "OK";
      fmt::print("[rank {}] {}-CRASH-{} after {} allreduces, the failing one took {:.3f} s: {}\n", rank, b.name(),
                 verdict, i, took, s.to_string());
      std::fflush(stdout);
      if (expect.linger.count() > 0) std::this_thread::sleep_for(expect.linger);
      _exit(in_time && named ? 0 : 1);
    }
  }
}

}  // namespace korovod::mpitest
