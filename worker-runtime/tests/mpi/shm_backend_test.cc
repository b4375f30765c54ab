// rt_shm_test: the shared-memory backend on its own, under `mpirun -np N` (2, 3, 4
// oversubscribed), against the MPI backend as the reference in the same run
// (backend_conformance.h). Every collective x dtype x size (0, 1, odd, several chunks, larger
// than the whole ring) with a deliberately small ring (4 KiB slots x 4) so every pipeline path
// runs, then the default geometry once; results must be bitwise equal to MPI's (inputs are small
// integers, exact in every dtype) and bitwise identical on all ranks.
// Also the bit-vector allreduce the negotiation runs on shared memory (shm_control_check.h) and
// allreduce_many, the fused response's tensors reduced in place.
//   --stuck   the last rank stays away (alive) for longer than a 1 s wait bound: the others'
//             allreduce_bits must give up after about 1 s (SHM-STUCK-OK); then, with no wait
//             bound, an interrupt_wait (the engine's watchdog) 0.4 s in must end their wait,
//             naming the stuck rank (SHM-INTERRUPT-OK).
//   --crash   the last rank is SIGKILLed by a timer thread while everyone loops over large
//             allreduces; each survivor must get an error within kCrashBoundSeconds and prints
//             SHM-CRASH-OK.
#include <mpi.h>

#include <cstring>

#include "backend_conformance.h"
#include "transport/shm/shm_backend.h"
#include "shm_control_check.h"
#include "transport/mpi/mpi_providers.h"
#include "transport/shm/shm_provider.h"

namespace korovod::mpitest {
namespace {

constexpr double kCrashBoundSeconds = 2.0;  // documented in docs/runtime-config.md

BackendPair make_shm_backends(const std::shared_ptr<mpi::MpiContext>& ctx, shm::Geometry geometry, int set_id,
                              int size) {
  shm::ShmBackendProvider provider(std::make_shared<mpi::MpiTransportProvider>(ctx), geometry, true,
                                   SystemEnv().host().id());
  return make_backends(provider, ctx, set_id, size);
}

// 0, 1, odd, several slots, more than the whole ring (in elements of t).
SizesFor sizes_for(const shm::Geometry& g) {
  return [g](DataType t) {
    const int64_t elem = element_size(t);
    const int64_t slot = static_cast<int64_t>(g.slot_bytes) / elem;
    return std::vector<int64_t>{0, 1, 7, 1027, slot * 7 / 2 + 3, slot * g.slots * 5 / 2 + 5};
  };
}

std::vector<int64_t> copy_sizes(const shm::Geometry& g) {
  const int64_t ring = static_cast<int64_t>(g.slot_bytes) * g.slots;
  return {0, 1, 4099, ring * 5 / 2 + 13};
}

int run_crash(const std::shared_ptr<mpi::MpiContext>& ctx, int rank, int size) {
  BackendPair b = make_shm_backends(ctx, shm::Geometry{}, 0, size);
  if (!b.under_test) return 1;
  run_crash_loop(*b.under_test, rank, size - 1, CrashExpectation{kCrashBoundSeconds, {}, {}});
}

}  // namespace
}  // namespace korovod::mpitest

int main(int argc, char** argv) {
  using namespace korovod;
  using namespace korovod::mpitest;
  MpiSession mpi(argc, argv);
  const int rank = mpi.rank(), size = mpi.size();
  if (!mpi.context()) return 2;
  if (argc > 1 && std::strcmp(argv[1], "--crash") == 0) return run_crash(mpi.context(), rank, size);
  if (argc > 1 && std::strcmp(argv[1], "--stuck") == 0) {
    shm::Geometry bounded;
    bounded.wait_timeout_seconds = 1.0;
    BackendPair s = make_shm_backends(mpi.context(), bounded, 0, size);
    BackendPair u = make_shm_backends(mpi.context(), shm::Geometry{}, 1, size);
    if (!s.under_test || !u.under_test) return 2;
    return run_stuck_peer(*s.under_test, *u.under_test, rank, size, bounded.wait_timeout_seconds);
  }

  Checker c(rank);
  // Streaming stores from 20 KiB: the largest sizes below take that path, the others do not.
  shm::Geometry small{4096, 4};
  small.streaming_bytes = 20 * 1024;
  BackendPair b = make_shm_backends(mpi.context(), small, 0, size);
  if (!MPI_CHECK(c, b.under_test && b.reference && b.under_test->enabled(kCpuDevice), "shm backend on one host: {}",
                 b.error)) {
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  check_reductions(*b.under_test, *b.reference, c, sizes_for(small), rank, size);
  check_copies(*b.under_test, *b.reference, c, copy_sizes(small), rank, size);
  check_bits_allreduce(*b.under_test, *b.reference, c, rank);
  // A fused response's tensors in place: one hop (small total), and rounds of the small ring
  // whose shares start and end inside tensors, with empty tensors among them.
  check_allreduce_many(*b.under_test, *b.reference, c, {3, 0, 17, 1}, rank);
  check_allreduce_many(*b.under_test, *b.reference, c, {1027, 0, 5, 2500, 1, 0, 3001}, rank);
  // Slots written with streaming stores (KOROVOD_SHM_SLOT_STORES=streaming): every reduction.
  shm::Geometry streamed = small;
  streamed.slot_stores = shm::SlotStores::kStreaming;
  BackendPair st = make_shm_backends(mpi.context(), streamed, 2, size);
  if (MPI_CHECK(c, st.under_test && st.reference, "streaming-slot shm backend: {}", st.error)) {
    check_reductions(*st.under_test, *st.reference, c, sizes_for(streamed), rank, size);
    check_allreduce_many(*st.under_test, *st.reference, c, {1027, 0, 5, 2500, 1, 0, 3001}, rank);
  }
  // The default geometry, on a buffer larger than its ring.
  BackendPair d = make_shm_backends(mpi.context(), shm::Geometry{}, 1, size);
  if (MPI_CHECK(c, d.under_test && d.reference, "default geometry shm backend: {}", d.error)) {
    // Measured slot stores (the default, auto): rank 0 decides per call and the others follow;
    // the first calls of a size use each way once, later ones the faster or a re-try.
    for (int call = 0; call < 4; ++call) {
      check_large_allreduce(*d.under_test, *d.reference, c, (3 << 20) / 4 + 11, rank,
                            fmt::format("default geometry, call {}", call));
    }
    // Autotune's chunk (Backend::set_chunk_bytes) within the same slots: whole pages, clamped to
    // the slot, 0 back to the slot; every collective still bitwise equal to MPI's.
    const int64_t slot = static_cast<int64_t>(shm::Geometry{}.slot_bytes);
    const std::vector<std::pair<int64_t, int64_t>> chunks = {{4096, 4096}, {20000, 16384}, {int64_t{1} << 30, slot}, {0, slot}};
    for (auto [chunk, in_effect] : chunks) {
      d.under_test->set_chunk_bytes(chunk);
      const std::string what = fmt::format("chunk {}", chunk);
      auto* shm_backend = dynamic_cast<shm::ShmBackend*>(d.under_test.get());
      MPI_CHECK(c, shm_backend && shm_backend->chunk_bytes() == in_effect, "{}: {} in effect, expected {}", what,
                shm_backend ? shm_backend->chunk_bytes() : -1, in_effect);
      check_large_allreduce(*d.under_test, *d.reference, c, (1 << 20) / 4 + 7, rank, what);
      check_reductions(*d.under_test, *d.reference, c, [](DataType) { return std::vector<int64_t>{1, 1027, 40000}; },
                       rank, size);
      check_copies(*d.under_test, *d.reference, c, {1, 5000, 70001}, rank, size);
    }
  }
  if (size == 4) check_device_hierarchical_on_cpu(mpi.context(), c, rank, size);
  return verdict(c, fmt::format("rt_shm_test np={}", size));  // the backends go before MPI (see MpiSession)
}
