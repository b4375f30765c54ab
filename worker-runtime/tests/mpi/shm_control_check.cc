// The shared-memory backend's bit-vector allreduce (the negotiation's per-cycle step when the
// control channel runs on shared memory), and its give-up bound on a live but stuck peer.
#include "shm_control_check.h"

#include <mpi.h>

#include <chrono>
#include <thread>

#include "core/testing/forwarding_backend.h"
#include "transport/common/hierarchical_backend.h"
#include "transport/common/host_groups.h"
#include "transport/mpi/mpi_providers.h"
#include "transport/shm/shm_provider.h"

namespace korovod::mpitest {
namespace {

uint64_t pattern(int rank, int round, size_t word) {
  uint64_t x = (static_cast<uint64_t>(rank) + 1) * 0x9E3779B97F4A7C15ull ^ (static_cast<uint64_t>(round) << 17) ^ word;
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  return (x ^ (x >> 32)) | (word % 3 == 0 ? ~uint64_t{0} >> 1 : 0);  // some words mostly set
}

}  // namespace

void check_bits_allreduce(Backend& shm, Backend& reference, Checker& c, int rank) {
  const size_t most = shm.bits_allreduce_words();
  if (!MPI_CHECK(c, most >= 17, "shm backend offers {} words for the bit-vector allreduce (want >= 17)", most)) return;
  int round = 0;
  for (size_t words : {size_t{1}, size_t{17}, most}) {
    for (int r = 0; r < 24; ++r, ++round) {
      const BitwiseOp op = r % 3 == 2 ? BitwiseOp::kOr : BitwiseOp::kAnd;
      std::vector<uint64_t> bits(words), want(words);
      for (size_t i = 0; i < words; ++i) bits[i] = pattern(rank, round, i);
      MPI_Allreduce(bits.data(), want.data(), static_cast<int>(words), MPI_UINT64_T, op == BitwiseOp::kOr ? MPI_BOR : MPI_BAND,
                    MPI_COMM_WORLD);
      Status st = shm.allreduce_bits(bits, op);
      MPI_CHECK(c, st.is_ok(), "allreduce_bits {} words round {}: {}", words, r, st.message());
      MPI_CHECK(c, bits == want, "allreduce_bits {} words round {} ({}): differs from MPI_Allreduce", words, r,
                op == BitwiseOp::kOr ? "OR" : "AND");
      if (r % 5 == 0) {  // a data collective between control rounds: separate round counters
        std::vector<float> x(37, 1.0f), y(37, 0.0f), z(37, 0.0f);
        MPI_CHECK(c, shm.allreduce(x.data(), y.data(), 37, DataType::kFloat32, ReduceOp::kSum).is_ok() &&
                         reference.allreduce(x.data(), z.data(), 37, DataType::kFloat32, ReduceOp::kSum).is_ok() && y == z,
                  "allreduce between bit-vector rounds");
      }
    }
  }
  std::vector<uint64_t> too_long(most + 1);
  Status st = shm.allreduce_bits(too_long, BitwiseOp::kAnd);
  MPI_CHECK(c, st.code() == StatusCode::kInvalidArgument && st.message().find("do not fit") != std::string::npos,
            "{} words must be refused with a clear error, got: {}", most + 1, st.message());
}

int run_stuck_peer(Backend& shm, Backend& unbounded, int rank, int size, double bound_seconds) {
  Checker c(rank);
  const int stuck = size - 1;
  const auto start = std::chrono::steady_clock::now();
  std::vector<uint64_t> bits(4, ~uint64_t{0});
  if (rank == stuck) {
    // Alive, but away for longer than the bound: the others must give up on their own.
    std::this_thread::sleep_for(std::chrono::duration<double>(bound_seconds * 2 + 1));
    Status late = shm.allreduce_bits(bits, BitwiseOp::kAnd);
    MPI_CHECK(c, !late.is_ok(), "the stuck rank's late allreduce_bits must fail (its peers gave up)");
  } else {
    Status st = shm.allreduce_bits(bits, BitwiseOp::kAnd);
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    MPI_CHECK(c, !st.is_ok(), "allreduce_bits with rank {} stuck must fail", stuck);
    MPI_CHECK(c, waited >= bound_seconds * 0.9 && waited < bound_seconds + 2.0,
              "gave up after {:.2f} s (bound {} s)", waited, bound_seconds);
    MPI_CHECK(c, st.message().find("did not arrive") != std::string::npos ||
                     st.message().find("failed") != std::string::npos,
              "the error names the reason: {}", st.message());
    fmt::print("[rank {}] SHM-STUCK-OK after {:.2f} s: {}\n", rank, waited, st.message());
  }

  // The same stuck rank, no wait bound: the watchdog's interrupt ends the wait, naming it.
  MPI_Barrier(MPI_COMM_WORLD);
  constexpr double kInterruptAfter = 0.4;
  const std::string why = "the collective timeout (test) passed";
  const auto again = std::chrono::steady_clock::now();
  if (rank == stuck) {
    std::this_thread::sleep_for(std::chrono::duration<double>(kInterruptAfter + 1.5));
    Status late = unbounded.allreduce_bits(bits, BitwiseOp::kAnd);
    MPI_CHECK(c, !late.is_ok(), "the stuck rank's late allreduce_bits must fail after the interrupt");
  } else {
    std::thread watchdog([&] {
      std::this_thread::sleep_for(std::chrono::duration<double>(kInterruptAfter));
      unbounded.interrupt_wait(why);
    });
    Status st = unbounded.allreduce_bits(bits, BitwiseOp::kAnd);
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - again).count();
    watchdog.join();
    MPI_CHECK(c, !st.is_ok(), "allreduce_bits with rank {} stuck must fail once interrupted", stuck);
    MPI_CHECK(c, waited >= kInterruptAfter * 0.9 && waited < kInterruptAfter + 1.0,
              "gave up {:.2f} s after the start, the interrupt came at {} s", waited, kInterruptAfter);
    MPI_CHECK(c, st.message().find(fmt::format("lost rank {} ", stuck)) != std::string::npos,
              "the error names the stuck rank {}: {}", stuck, st.message());
    // This rank's own interrupt, or a peer's abort flag naming the stuck rank, whichever came first.
    MPI_CHECK(c, st.message().rfind(why, 0) == 0 || st.message().find("failed waiting for it") != std::string::npos,
              "the error says why: {}", st.message());
    fmt::print("[rank {}] SHM-INTERRUPT-OK after {:.2f} s: {}\n", rank, waited, st.message());
  }
  return verdict(c, fmt::format("rt_shm_stuck_peer np={}", size));
}

void check_hierarchical(const std::shared_ptr<mpi::MpiContext>& ctx, Checker& c, int rank, int size, bool staged);

namespace {

// A host backend posing as a device backend (enabled for device 0, not for the CPU), so that the
// hierarchy stages its shard through copy() as it does with NCCL.
class PosingAsDevice final : public testing::ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  bool enabled(int device) const override { return device == 0; }
  Status copy(void* dst, const void* src, int64_t bytes) override {
    ++copies;
    return inner().copy(dst, src, bytes);
  }
  int copies = 0;
};

// Builds the composition the NCCL provider builds, with host backends in the device's place.
class HierarchicalOnCpu final : public BackendProvider {
 public:
  HierarchicalOnCpu(std::shared_ptr<mpi::MpiContext> ctx, bool staged) : ctx_(std::move(ctx)), staged_(staged) {}
  std::string name() const override { return "hierarchical(SHM in host, MPI across)"; }
  PosingAsDevice* staged_local = nullptr;  // set by create_backend when staged
  Result<std::unique_ptr<Backend>> create_backend(const std::vector<int>& ranks, int set_id) override {
    std::vector<std::string> hosts;
    for (int r : ranks) hosts.push_back(fmt::format("simulated-host-{}", r / 2));
    int me = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    std::optional<HostGroups> groups = host_groups(hosts, ranks, me);
    if (!groups) return Status::invalid_argument("no host groups for this layout");
    mpi::MpiBackendProvider mpi_provider(ctx_);
    shm::ShmBackendProvider shm_provider(std::make_shared<mpi::MpiTransportProvider>(ctx_), shm::Geometry{4096, 4}, true,
                                         SystemEnv().host().id());
    Result<std::unique_ptr<Backend>> flat = mpi_provider.create_backend(ranks, set_id + 100);
    if (!flat.is_ok()) return flat.status();
    Result<std::unique_ptr<Backend>> local = shm_provider.create_backend(groups->local, set_id + 200);
    if (!local.is_ok()) return local.status();
    if (staged_) {
      auto posing = std::make_unique<PosingAsDevice>(std::move(local).value());
      staged_local = posing.get();
      local = std::unique_ptr<Backend>(std::move(posing));
    }
    Result<std::unique_ptr<Backend>> cross = mpi_provider.create_backend(groups->cross, set_id + 300);
    if (!cross.is_ok()) return cross.status();
    return std::unique_ptr<Backend>(std::make_unique<HierarchicalBackend>(
        std::move(flat).value(), std::move(local).value(), std::move(cross).value()));
  }

 private:
  std::shared_ptr<mpi::MpiContext> ctx_;
  bool staged_;
};

}  // namespace

void check_device_hierarchical_on_cpu(const std::shared_ptr<mpi::MpiContext>& ctx, Checker& c, int rank, int size) {
  for (bool staged : {false, true}) check_hierarchical(ctx, c, rank, size, staged);
}

void check_hierarchical(const std::shared_ptr<mpi::MpiContext>& ctx, Checker& c, int rank, int size, bool staged) {
  HierarchicalOnCpu provider(ctx, staged);
  BackendPair b = make_backends(provider, ctx, staged ? 41 : 40, size);
  if (!MPI_CHECK(c, b.under_test && b.reference, "hierarchical composition (staged {}): {}", staged, b.error)) return;
  // Host groups as the NCCL provider computes them: {0,1} and {2,3} inside, {0,2} and {1,3} across.
  const std::vector<std::string> hosts = {"a", "a", "b", "b"};
  const std::optional<HostGroups> g = host_groups(hosts, {0, 1, 2, 3}, rank);
  MPI_CHECK(c, g && g->local == (std::vector<int>{rank / 2 * 2, rank / 2 * 2 + 1}) &&
                   g->cross == (std::vector<int>{rank % 2, rank % 2 + 2}),
            "host_groups for two hosts of two ranks");
  MPI_CHECK(c, !host_groups({"a", "a", "a", "b"}, {0, 1, 2, 3}, rank), "unequal hosts: no hierarchy");
  const auto sizes = [](DataType) { return std::vector<int64_t>{0, 1, 3, 7, 1027, 5000}; };
  check_reductions(*b.under_test, *b.reference, c, sizes, rank, size);
  // Average as the engine hands it to a device backend: Sum on both levels, 1/size once.
  std::vector<float> in(1001), out(1001), want(1001);
  for (size_t i = 0; i < in.size(); ++i) {
    in[i] = static_cast<float>(rank + 1 + i % 5);
    want[i] = (size * (size + 1) / 2.0f + size * static_cast<float>(i % 5)) / size * 3.0f;
  }
  Status st = b.under_test->allreduce_scaled(in.data(), out.data(), 1001, DataType::kFloat32, ReduceOp::kAverage, 1.0, 3.0);
  MPI_CHECK(c, st.is_ok() && out == want, "hierarchical Average with postscale 3 (staged {}): {}", staged, st.message());
  if (staged) {
    MPI_CHECK(c, provider.staged_local && provider.staged_local->copies > 0, "a device-posing local backend is staged");
  }
}

}  // namespace korovod::mpitest
