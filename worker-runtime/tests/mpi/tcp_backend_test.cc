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

#include <cstring>

#include "backend_conformance.h"
#include "transport/mpi/mpi_providers.h"
#include "transport/common/hierarchical_backend.h"
#include "transport/tcp/tcp_provider.h"

namespace korovod::mpitest {
namespace {

constexpr double kCrashBoundSeconds = 2.0;

BackendPair make_tcp_backends(const std::shared_ptr<mpi::MpiContext>& ctx, const tcp::TcpOptions& options,
                              int set_id, int size) {
  tcp::TcpBackendProvider provider(std::make_shared<mpi::MpiTransportProvider>(ctx), options);
  return make_backends(provider, ctx, set_id, size);
}

// 0, 1, odd, several segments, 1 MiB (in elements of t).
SizesFor sizes_for(int64_t segment_bytes) {
  return [segment_bytes](DataType t) {
    const int64_t elem = element_size(t);
    const int64_t seg = segment_bytes / elem;
    return std::vector<int64_t>{0, 1, 7, 1027, seg * 7 / 2 + 3, (1 << 20) / elem + 5};
  };
}

std::vector<int64_t> copy_sizes(int64_t segment_bytes) { return {0, 1, 4099, segment_bytes * 5 / 2 + 13, 3 << 20}; }

// The victim is among the ranks that went without a failure notice.
bool names_victim(const Status& s, int victim) {
  const std::string& m = s.message();
  const size_t at = m.find("(killed or exited): ");
  return at != std::string::npos &&
         m.substr(at, m.find(';', at) - at).find(fmt::format("rank {}", victim)) != std::string::npos;
}

int run_crash(const std::shared_ptr<mpi::MpiContext>& ctx, int rank, int size) {
  tcp::TcpOptions options;
  options.timeout_seconds = 20;
  BackendPair b = make_tcp_backends(ctx, options, 0, size);
  if (!b.under_test) return 1;
  // Stay a moment so the other survivors see the victim go first, not this rank's exit.
  run_crash_loop(*b.under_test, rank, size - 1,
                 CrashExpectation{kCrashBoundSeconds, names_victim, std::chrono::milliseconds(500)});
}

int run_hierarchical(const std::shared_ptr<mpi::MpiContext>& ctx, int rank, int size) {
  Checker c(rank);
  Result<Config> config = parse_config(process_environment());
  tcp::TcpOptions options;
  options.segment_bytes = 1024;
  options.timeout_seconds = 20;
  options.hierarchical_allreduce = true;
  options.host_id = config.is_ok() ? config->host_id : "";
  options.machine_id = SystemEnv().host().id();  // the shared memory inside each "host"
  options.shm_geometry = shm::Geometry{4096, 4};
  MPI_CHECK(c, !options.host_id.empty(), "KOROVOD_HOST_ID is not set (run through tcp_as_hosts.sh)");
  BackendPair b = make_tcp_backends(ctx, options, 0, size);
  if (!MPI_CHECK(c, b.under_test && b.reference, "tcp backend: {}", b.error)) MPI_Abort(MPI_COMM_WORLD, 2);
  const auto* hier = dynamic_cast<const HierarchicalBackend*>(b.under_test.get());
  const bool want_hier = size % 2 == 0 && size >= 4;
  MPI_CHECK(c, (hier != nullptr) == want_hier, "hierarchical backend built: {} (expected {})", hier != nullptr,
            want_hier);
  if (hier) MPI_CHECK(c, hier->local_size() == 2 && hier->cross_size() == size / 2, "host groups");
  check_reductions(*b.under_test, *b.reference, c, sizes_for(options.segment_bytes), rank, size);
  return verdict(c,
                 fmt::format("rt_tcp_test --hierarchical np={} ({})", size, hier ? "hierarchical" : "flat fallback"));
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
  MpiSession mpi(argc, argv);
  const int rank = mpi.rank(), size = mpi.size();
  if (!mpi.context()) return 2;
  if (argc > 1 && std::strcmp(argv[1], "--crash") == 0) return run_crash(mpi.context(), rank, size);
  if (argc > 1 && std::strcmp(argv[1], "--hierarchical") == 0) return run_hierarchical(mpi.context(), rank, size);

  Checker c(rank);
  tcp::TcpOptions small;
  small.segment_bytes = 1024;
  small.timeout_seconds = 20;
  BackendPair b = make_tcp_backends(mpi.context(), small, 0, size);
  if (!MPI_CHECK(c, b.under_test && b.reference && b.under_test->enabled(kCpuDevice) && b.under_test->name() == "TCP",
                 "tcp backend: {}", b.error)) {
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  check_reductions(*b.under_test, *b.reference, c, sizes_for(small.segment_bytes), rank, size);
  check_copies(*b.under_test, *b.reference, c, copy_sizes(small.segment_bytes), rank, size);
  // The default options, on a buffer of many segments.
  BackendPair d = make_tcp_backends(mpi.context(), tcp::TcpOptions{}, 1, size);
  if (MPI_CHECK(c, d.under_test && d.reference, "default options tcp backend: {}", d.error)) {
    check_large_allreduce(*d.under_test, *d.reference, c, (8 << 20) / 4 + 11, rank, "default options");
  }
  return verdict(c, fmt::format("rt_tcp_test np={}", size));  // the backends go before MPI (see MpiSession)
}
