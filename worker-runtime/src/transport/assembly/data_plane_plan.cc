#include "transport/assembly/data_plane_plan.h"

#include <fmt/format.h>

#include <algorithm>

namespace korovod {

const char* data_plane_name(DataPlane plane) {
  switch (plane) {
    case DataPlane::kNccl:
      return "NCCL";
    case DataPlane::kShm:
      return "SHM";
    case DataPlane::kTcp:
      return "TCP";
    case DataPlane::kMpi:
      return "MPI";
  }
  return "?";
}

bool DataPlanePlan::has(DataPlane plane) const { return std::find(order.begin(), order.end(), plane) != order.end(); }

Result<DataPlanePlan> plan_data_planes(const Config& config, ControlPlaneKind control, bool nccl_built) {
  const std::string& cpu = config.cpu_operations;  // "", "mpi", "shm" or "tcp" (parse_config)
  if (cpu == "mpi" && control != ControlPlaneKind::kMpi) {
    return Status::invalid_argument("KOROVOD_CPU_OPERATIONS=mpi, but the runtime was started without MPI");
  }
  DataPlanePlan plan;
  plan.hierarchical_allreduce = config.hierarchical_allreduce;
  plan.gpu_operations = gpu_operations_from(config.gpu_operations);
  plan.shm_forced = cpu == "shm";
  // GPU tensors first: NCCL is enabled for device >= 0 only, so CPU tensors fall through it.
  if (nccl_built) plan.order.push_back(DataPlane::kNccl);
  // CPU tensors: TCP when forced, else shared memory for sets on one host unless MPI is forced;
  // the control plane's own data plane last, for every set the others do not take.
  if (cpu == "tcp") {
    plan.order.push_back(DataPlane::kTcp);
  } else if (cpu != "mpi") {
    plan.order.push_back(DataPlane::kShm);
  }
  const DataPlane native = control == ControlPlaneKind::kMpi ? DataPlane::kMpi : DataPlane::kTcp;
  if (!plan.has(native)) plan.order.push_back(native);
  plan.tcp_shares_secret = control == ControlPlaneKind::kMpi && plan.has(DataPlane::kTcp);
  return plan;
}

std::string describe(const DataPlanePlan& plan) {
  std::vector<std::string> names;
  for (DataPlane p : plan.order) names.emplace_back(data_plane_name(p));
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace korovod
