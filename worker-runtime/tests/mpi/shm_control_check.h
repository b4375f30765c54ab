// Checks of the shared-memory backend's control-plane role (shm_control_check.cc).
#pragma once

#include "backend_conformance.h"

namespace korovod::mpitest {

// allreduce_bits (AND and OR, 1 / 17 / the most words, interleaved with data collectives)
// against MPI_Allreduce on the same vectors, and a clear refusal one word over the limit.
void check_bits_allreduce(Backend& shm, Backend& reference, Checker& c, int rank);

// The last rank stays away (alive) for twice `bound_seconds`: every other rank's
// allreduce_bits must fail after about the bound, naming why. Returns the exit code.
// `bounded`: a wait bound of bound_seconds; `unbounded`: none, so only interrupt_wait (the
// engine's watchdog) ends a wait on the stuck rank.
int run_stuck_peer(Backend& bounded, Backend& unbounded, int rank, int size, double bound_seconds);

// np = 4 as two simulated hosts of two ranks (host = rank / 2): HierarchicalBackend (the
// NCCL hierarchical allreduce's composition) with shared memory in the place of NCCL inside a
// host and MPI across, against the MPI backend: every reduction bitwise equal, in and out of place.
void check_device_hierarchical_on_cpu(const std::shared_ptr<mpi::MpiContext>& ctx, Checker& c, int rank, int size);

}  // namespace korovod::mpitest
