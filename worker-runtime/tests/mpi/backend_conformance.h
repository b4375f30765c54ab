// A Backend under test against the MPI backend as the reference, in the same `mpirun`: the checks
// rt_shm_test and rt_tcp_test share. Inputs are small integers, exact in every dtype, so results
// must be bitwise equal to the reference's and bitwise identical on all ranks. Every failed check
// names the backend under test, the collective, the dtype, the op and the size.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "korovod/transport.h"
#include "mpi_check.h"
#include "transport/mpi/mpi_context.h"

namespace korovod::mpitest {

using Bytes = std::vector<std::byte>;

struct BackendPair {
  std::unique_ptr<Backend> under_test, reference;  // reference: the MPI backend on the same ranks
  std::string error;                               // why under_test is null
};

// Both backends over all ranks of MPI_COMM_WORLD (`size` of them) as process set `set_id`.
BackendPair make_backends(BackendProvider& under_test, const std::shared_ptr<mpi::MpiContext>& ctx, int set_id,
                          int size);

// n elements of dtype t for `rank` (at least one byte, so data() is never null); `salt` varies it.
Bytes input(DataType t, ReduceOp op, int rank, int64_t n, int salt = 0);

// Collective over MPI_COMM_WORLD: are these bytes identical on every rank?
bool same_everywhere(const Bytes& b);

// MPI for one backend test process: MPI_Init_thread(MPI_THREAD_MULTIPLE), rank, size and the
// MpiContext on construction; on destruction the context is dropped and MPI finalized (the
// context owns MPI). Declare it before any backend, so the backends are destroyed first.
class MpiSession {
 public:
  MpiSession(int& argc, char**& argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::shared_ptr<mpi::MpiContext>& context() const { return ctx_; }  // null if it failed

 private:
  int rank_ = 0, size_ = 1;
  std::shared_ptr<mpi::MpiContext> ctx_;
};

// Agrees on the verdict over all ranks (collective): rank 0 prints "<title>: all checks passed"
// or "<title>: FAILED". Returns the exit code, 0 when no rank failed a check.
int verdict(const Checker& c, const std::string& title);

// Element counts to try for a dtype: 0, 1, odd, and the backend's pipeline boundaries.
using SizesFor = std::function<std::vector<int64_t>(DataType)>;

// allreduce (out of place and in place) and reducescatter (uneven counts, the last rank possibly
// getting nothing): every dtype x op x sizes_for(dtype).
void check_reductions(Backend& under_test, Backend& reference, Checker& c, const SizesFor& sizes_for, int rank,
                      int size);

// allreduce_many (a backend that offers it): tensors of `counts` elements, some empty, end to end
// across the backend's rounds, out of place and in place, postscale 1 and 0.5, against the
// reference's allreduce of each tensor followed by kernels::scale; every dtype x op.
void check_allreduce_many(Backend& under_test, Backend& reference, Checker& c, const std::vector<int64_t>& counts,
                          int rank);

// allgatherv, broadcast from every root, alltoallv and barrier for each n in `sizes` (bytes).
void check_copies(Backend& under_test, Backend& reference, Checker& c, const std::vector<int64_t>& sizes, int rank,
                  int size);

// One float32 sum allreduce of n elements, equal to the reference's and identical on all ranks.
void check_large_allreduce(Backend& under_test, Backend& reference, Checker& c, int64_t n, int rank,
                           const std::string& what);

// What a survivor of a killed rank must see (--crash).
struct CrashExpectation {
  double bound_seconds = 2.0;                                    // the failing allreduce returns within this
  std::function<bool(const Status&, int victim)> names_victim;  // empty: any error will do
  std::chrono::milliseconds linger{0};                           // stay this long before exiting
};

// `victim` SIGKILLs itself 300 ms in while every rank loops over large allreduces on `b`; a
// survivor prints "<NAME>-CRASH-OK" when its error came in time (and named the victim), else
// "<NAME>-CRASH-SLOW" or "<NAME>-CRASH-BAD", and _exits 0 or 1 (MPI cannot be finalized with a
// dead peer).
[[noreturn]] void run_crash_loop(Backend& b, int rank, int victim, const CrashExpectation& expect);

}  // namespace korovod::mpitest
