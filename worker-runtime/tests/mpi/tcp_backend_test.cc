// rt_tcp_test: the TCP backend on its own, under `mpirun -np N` (2, 3, 4 oversubscribed), against
// the MPI backend as the reference in the same run. Every collective x dtype x size (0, 1, odd,
// several segments, large) with a deliberately small segment (1 KiB) so every pipeline path runs,
// then the default options once on a large buffer; results must be bitwise equal to MPI's
// (inputs are small integers, exact in every dtype) and bitwise identical on all ranks.
//   --hierarchical  the same checks on the hierarchical allreduce (shared memory on each host,
//             TCP across), with host identities forced by KOROVOD_HOST_ID (tcp_as_hosts.sh: two
//             ranks per "host"); np 4 must build it (2 hosts x 2), np 3 (2 + 1, not
//             homogeneous) must fall back to the flat ring.
//   --crash   the last rank is SIGKILLed by a timer thread while everyone loops over large
//             allreduces; each survivor must get an error naming that rank within
//             kCrashBoundSeconds and prints TCP-CRASH-OK.
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "../dtype_values.h"
#include "mpi_check.h"
#include "transport/mpi/mpi_providers.h"
#include "transport/tcp/hierarchical_backend.h"
#include "transport/tcp/tcp_provider.h"

namespace korovod::mpitest {
namespace {

constexpr double kCrashBoundSeconds = 2.0;

const DataType kTypes[] = {DataType::kUInt8, DataType::kInt8, DataType::kUInt16, DataType::kInt16,
                           DataType::kInt32, DataType::kInt64, DataType::kFloat16, DataType::kFloat32,
                           DataType::kFloat64, DataType::kBool, DataType::kBFloat16};
const ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct};

using Bytes = std::vector<std::byte>;

struct Backends {
  std::unique_ptr<Backend> tcp, mpi;
  std::string error;
};

Backends make_backends(const std::shared_ptr<mpi::MpiContext>& ctx, const tcp::TcpOptions& options, int set_id,
                       int size) {
  std::vector<int> ranks(size);
  for (int i = 0; i < size; ++i) ranks[i] = i;
  auto transport = std::make_shared<mpi::MpiTransportProvider>(ctx);
  tcp::TcpBackendProvider tcp_provider(transport, options);
  mpi::MpiBackendProvider mpi_provider(ctx);
  Backends b;
  auto t = tcp_provider.create_backend(ranks, set_id);
  auto m = mpi_provider.create_backend(ranks, set_id);
  if (t.is_ok()) b.tcp = std::move(t).value();
  else b.error = t.status().to_string();
  if (m.is_ok()) b.mpi = std::move(m).value();
  return b;
}

Bytes input(DataType t, ReduceOp op, int rank, int64_t n, int salt = 0) {
  Bytes b(static_cast<size_t>(std::max<int64_t>(1, n * element_size(t))));
  for (int64_t i = 0; i < n; ++i) {
    double v = t == DataType::kBool ? (rank + i + salt) % 2
               : op == ReduceOp::kProduct ? 1 + (rank + i) % 2
                                          : rank + 1 + (i + salt) % 3;
    testing::store(t, b.data(), i, v);
  }
  return b;
}

// Bitwise identical on every rank: compare each rank's bytes with rank 0's.
bool same_everywhere(const Bytes& b) {
  int len = static_cast<int>(b.size());
  Bytes root = b;
  MPI_Bcast(root.data(), len, MPI_BYTE, 0, MPI_COMM_WORLD);
  int mine = root == b, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return all != 0;
}

std::vector<int64_t> sizes_for(DataType t, int64_t segment_bytes) {
  const int64_t elem = element_size(t);
  const int64_t seg = segment_bytes / elem;
  return {0, 1, 7, 1027, seg * 7 / 2 + 3, (1 << 20) / elem + 5};
}

void check_reductions(Backends& b, Checker& c, int64_t segment_bytes, int rank, int size) {
  for (DataType t : kTypes) {
    for (ReduceOp op : kOps) {
      for (int64_t n : sizes_for(t, segment_bytes)) {
        Bytes in = input(t, op, rank, n), want(in.size()), got(in.size()), inplace = in;
        Status sm = b.mpi->allreduce(in.data(), want.data(), n, t, op);
        Status st = b.tcp->allreduce(in.data(), got.data(), n, t, op);
        Status si = b.tcp->allreduce(inplace.data(), inplace.data(), n, t, op);
        MPI_CHECK(c, sm.is_ok() && st.is_ok() && si.is_ok(), "allreduce {} {} n={}: {} {}", dtype_name(t),
                  reduce_op_name(op), n, st.to_string(), si.to_string());
        MPI_CHECK(c, got == want && inplace == want, "allreduce {} {} n={}: differs from MPI", dtype_name(t),
                  reduce_op_name(op), n);
        MPI_CHECK(c, same_everywhere(got), "allreduce {} {} n={}: ranks differ", dtype_name(t), reduce_op_name(op), n);
        // reducescatter with uneven counts, the last rank possibly getting nothing.
        std::vector<int64_t> counts(size);
        int64_t given = 0;
        for (int r = 0; r < size; ++r) given += counts[r] = r == size - 1 ? n - given : n / size + (r == 0);
        if (counts[size - 1] < 0) continue;
        Bytes rs_want(static_cast<size_t>(std::max<int64_t>(1, counts[rank] * element_size(t)))), rs_got = rs_want;
        Status rm = b.mpi->reducescatter(in.data(), rs_want.data(), counts, t, op);
        Status rt = b.tcp->reducescatter(in.data(), rs_got.data(), counts, t, op);
        MPI_CHECK(c, rm.is_ok() && rt.is_ok() && rs_got == rs_want, "reducescatter {} {} n={}: {}", dtype_name(t),
                  reduce_op_name(op), n, rt.to_string());
      }
    }
  }
}

void check_copies(Backends& b, Checker& c, int64_t segment_bytes, int rank, int size) {
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{4099}, segment_bytes * 5 / 2 + 13, int64_t{3 << 20}}) {
    // allgatherv: rank r contributes n + r * 3 bytes (alternate ranks none when n == 0).
    std::vector<int64_t> recv_bytes(size);
    for (int r = 0; r < size; ++r) recv_bytes[r] = n == 0 ? (r % 2) * 5 : n + r * 3;
    int64_t total = 0;
    for (int64_t x : recv_bytes) total += x;
    Bytes mine = input(DataType::kUInt8, ReduceOp::kSum, rank, recv_bytes[rank], 1);
    Bytes want(static_cast<size_t>(total + 1)), got = want;
    Status sm = b.mpi->allgatherv(mine.data(), recv_bytes[rank], want.data(), recv_bytes);
    Status st = b.tcp->allgatherv(mine.data(), recv_bytes[rank], got.data(), recv_bytes);
    MPI_CHECK(c, sm.is_ok() && st.is_ok() && got == want, "allgatherv n={}: {}", n, st.to_string());
    // broadcast from every root.
    for (int root = 0; root < size; ++root) {
      Bytes buf = input(DataType::kUInt8, ReduceOp::kSum, rank, n, root);
      Bytes ref = input(DataType::kUInt8, ReduceOp::kSum, root, n, root);
      Status sb = b.tcp->broadcast(buf.data(), n, root);
      MPI_CHECK(c, sb.is_ok() && buf == ref, "broadcast n={} root={}: {}", n, root, sb.to_string());
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
    Status am = b.mpi->alltoallv(send.data(), sbytes, awant.data(), rbytes);
    Status at = b.tcp->alltoallv(send.data(), sbytes, agot.data(), rbytes);
    MPI_CHECK(c, am.is_ok() && at.is_ok() && agot == awant, "alltoallv n={}: {}", n, at.to_string());
    MPI_CHECK(c, b.tcp->barrier().is_ok(), "barrier");
  }
}

int run_crash(const std::shared_ptr<mpi::MpiContext>& ctx, int rank, int size) {
  tcp::TcpOptions options;
  options.timeout_seconds = 20;
  Backends b = make_backends(ctx, options, 0, size);
  if (!b.tcp) return 1;
  std::vector<float> x(4 << 20, 1.f);
  const int victim = size - 1;
  if (rank == victim) {
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      raise(SIGKILL);
    }).detach();
  }
  for (int i = 0;; ++i) {
    auto start = std::chrono::steady_clock::now();
    Status s = b.tcp->allreduce(x.data(), x.data(), static_cast<int64_t>(x.size()), DataType::kFloat32, ReduceOp::kMax);
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!s.is_ok()) {
      // The victim is among the ranks that went without a failure notice.
      const std::string& m = s.message();
      const size_t at = m.find("(killed or exited): ");
      const bool named = at != std::string::npos &&
                         m.substr(at, m.find(';', at) - at).find(fmt::format("rank {}", victim)) != std::string::npos;
      const bool ok = took < kCrashBoundSeconds && named;
      fmt::print("[rank {}] {} after {} allreduces, the failing one took {:.3f} s: {}\n", rank,
                 ok ? "TCP-CRASH-OK" : "TCP-CRASH-BAD", i, took, s.to_string());
      std::fflush(stdout);
      // Stay a moment so the other survivors see the victim go first, not this rank's exit.
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      _exit(ok ? 0 : 1);  // MPI cannot be finalized with a dead peer
    }
  }
}

int run_hierarchical(const std::shared_ptr<mpi::MpiContext>& ctx, int rank, int size) {
  Checker c(rank);
  Result<Config> config = parse_config(process_environment());
  tcp::TcpOptions options;
  options.segment_bytes = 1024;
  options.timeout_seconds = 20;
  options.hierarchical_allreduce = true;
  options.host_id = config.is_ok() ? config->host_id : "";
  options.shm_geometry = shm::Geometry{4096, 4};
  MPI_CHECK(c, !options.host_id.empty(), "KOROVOD_HOST_ID is not set (run through tcp_as_hosts.sh)");
  Backends b = make_backends(ctx, options, 0, size);
  if (!MPI_CHECK(c, b.tcp && b.mpi, "tcp backend: {}", b.error)) MPI_Abort(MPI_COMM_WORLD, 2);
  const auto* hier = dynamic_cast<const tcp::HierarchicalBackend*>(b.tcp.get());
  const bool want_hier = size % 2 == 0 && size >= 4;
  MPI_CHECK(c, (hier != nullptr) == want_hier, "hierarchical backend built: {} (expected {})", hier != nullptr,
            want_hier);
  if (hier) MPI_CHECK(c, hier->local_size() == 2 && hier->cross_size() == size / 2, "host groups");
  check_reductions(b, c, options.segment_bytes, rank, size);
  int failures = c.failures(), total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    fmt::print("rt_tcp_test --hierarchical np={} ({}): {}\n", size, hier ? "hierarchical" : "flat fallback",
               total == 0 ? "all checks passed" : "FAILED");
  }
  return total;
}

}  // namespace
}  // namespace korovod::mpitest

int main(int argc, char** argv) {
  using namespace korovod;
  using namespace korovod::mpitest;
  if (argc > 1 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    fmt::print("usage: mpirun -np N rt_tcp_test [--crash | --hierarchical]\n"
               "Checks the TCP backend against the MPI backend (every op x dtype x size); --crash kills\n"
               "the last rank mid-allreduce and checks that the others fail in time, naming it;\n"
               "--hierarchical checks the hierarchical allreduce (run through tcp_as_hosts.sh).\n");
    return 0;
  }
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  Result<std::shared_ptr<mpi::MpiContext>> ctx = mpi::MpiContext::create(nullptr, false);
  if (!ctx.is_ok()) return 2;
  if (argc > 1 && std::strcmp(argv[1], "--crash") == 0) return run_crash(*ctx, rank, size);
  if (argc > 1 && std::strcmp(argv[1], "--hierarchical") == 0) {
    const int total = run_hierarchical(*ctx, rank, size);
    ctx = Status::aborted("done");
    MPI_Finalize();
    return total == 0 ? 0 : 1;
  }

  Checker c(rank);
  tcp::TcpOptions small;
  small.segment_bytes = 1024;
  small.timeout_seconds = 20;
  Backends b = make_backends(*ctx, small, 0, size);
  if (!MPI_CHECK(c, b.tcp && b.mpi && b.tcp->enabled(kCpuDevice) && b.tcp->name() == "TCP", "tcp backend: {}",
                 b.error)) {
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  check_reductions(b, c, small.segment_bytes, rank, size);
  check_copies(b, c, small.segment_bytes, rank, size);
  // The default options, on a buffer of many segments.
  Backends d = make_backends(*ctx, tcp::TcpOptions{}, 1, size);
  const int64_t n = (8 << 20) / 4 + 11;
  Bytes in = input(DataType::kFloat32, ReduceOp::kSum, rank, n), want(in.size()), got(in.size());
  MPI_CHECK(c, d.tcp && d.mpi->allreduce(in.data(), want.data(), n, DataType::kFloat32, ReduceOp::kSum).is_ok() &&
                   d.tcp->allreduce(in.data(), got.data(), n, DataType::kFloat32, ReduceOp::kSum).is_ok() &&
                   got == want && same_everywhere(got),
            "default options allreduce");
  int failures = c.failures(), total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) fmt::print("rt_tcp_test np={}: {}\n", size, total == 0 ? "all checks passed" : "FAILED");
  b = {};
  d = {};
  ctx = Status::aborted("done");  // MPI_Finalize before returning, as MpiContext owns it
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
