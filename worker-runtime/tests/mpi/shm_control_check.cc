// The shared-memory backend's bit-vector allreduce (the negotiation's per-cycle step when the
// control channel runs on shared memory), and its give-up bound on a live but stuck peer.
#include "shm_control_check.h"

#include <mpi.h>

#include <chrono>
#include <thread>

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

int run_stuck_peer(Backend& shm, int rank, int size, double bound_seconds) {
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
  return verdict(c, fmt::format("rt_shm_stuck_peer np={}", size));
}

}  // namespace korovod::mpitest
