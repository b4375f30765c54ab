// Which data planes a runtime gets, decided once from its Config and the way the job started
// (mpirun: MPI is the control plane; korovodrun, a rendezvous store, an elastic reset or a
// one-rank start: TCP is). A pure function, so every combination is unit-tested; build_data_planes
// (data_planes.h) turns the plan into providers. What a process set then runs on still depends on
// its members (shared memory needs one host, hierarchical allreduce equal ranks per host): each
// provider decides that collectively when the set is created.
#pragma once

#include <string>
#include <vector>

#include "korovod/config.h"
#include "korovod/status.h"
#include "transport/common/gpu_plane.h"

namespace korovod {

// The control plane the job started with.
enum class ControlPlaneKind { kMpi, kTcp };

// A data plane, in the order the runtime's backends are listed (the first enabled one wins).
enum class DataPlane { kNccl, kShm, kTcp, kMpi };
const char* data_plane_name(DataPlane plane);  // "NCCL", "SHM", "TCP", "MPI": the providers' names

struct DataPlanePlan {
  std::vector<DataPlane> order;  // last = the fallback every set can run on
  // KOROVOD_CPU_OPERATIONS=shm: failing to set up shared memory on one host is an error.
  bool shm_forced = false;
  // KOROVOD_HIERARCHICAL_ALLREDUCE: NCCL within a host and the fallback plane across hosts;
  // the TCP plane (when listed) shared memory within a host and TCP across.
  bool hierarchical_allreduce = false;
  GpuOperations gpu_operations = GpuOperations::kAuto;  // KOROVOD_GPU_OPERATIONS
  // The TCP plane under MPI: each set's rank 0 sends its sockets' secret over MPI (the trusted
  // channel); under the TCP control plane, the data meshes prove the job's own secret.
  bool tcp_shares_secret = false;

  bool has(DataPlane plane) const;
  DataPlane fallback() const { return order.back(); }
};

// nccl_built: the runtime was built with NCCL (KOROVOD_HAVE_NCCL). An error names the setting
// that cannot be honoured (KOROVOD_CPU_OPERATIONS=mpi without MPI).
Result<DataPlanePlan> plan_data_planes(const Config& config, ControlPlaneKind control, bool nccl_built);

// "NCCL, SHM, MPI" (tests and debug logs).
std::string describe(const DataPlanePlan& plan);

}  // namespace korovod
