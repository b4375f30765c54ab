// The choice of data planes (transport/assembly/data_plane_plan.h) for every start and setting,
// from the environment as parse_config reads it, and the providers build_data_planes makes of it.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "transport/assembly/data_planes.h"
#include "transport/fake/fake_world.h"

namespace korovod {
namespace {

Config config_from(const EnvMap& env) {
  Result<Config> c = parse_config(env);
  EXPECT_TRUE(c.is_ok()) << c.status().to_string();
  return c.is_ok() ? *c : Config{};
}

std::string plan_of(const EnvMap& env, ControlPlaneKind control, bool nccl_built) {
  Result<DataPlanePlan> plan = plan_data_planes(config_from(env), control, nccl_built);
  return plan.is_ok() ? describe(*plan) : "error: " + plan.status().message();
}

constexpr auto kMpi = ControlPlaneKind::kMpi;
constexpr auto kTcp = ControlPlaneKind::kTcp;

struct Row {
  ControlPlaneKind control;
  const char* cpu_operations;  // "" = unset
  const char* cpu_only;        // built without NCCL
  const char* with_nccl;       // built with NCCL
};

// Every start x KOROVOD_CPU_OPERATIONS, as the table in worker-runtime/README.md says.
constexpr Row kRows[] = {
    {kMpi, "", "SHM, MPI", "NCCL, SHM, MPI"},
    {kMpi, "shm", "SHM, MPI", "NCCL, SHM, MPI"},
    {kMpi, "tcp", "TCP, MPI", "NCCL, TCP, MPI"},
    {kMpi, "mpi", "MPI", "NCCL, MPI"},
    {kTcp, "", "SHM, TCP", "NCCL, SHM, TCP"},
    {kTcp, "shm", "SHM, TCP", "NCCL, SHM, TCP"},
    {kTcp, "tcp", "TCP", "NCCL, TCP"},
};

TEST(DataPlanePlan, EveryStartAndCpuOperationsListsItsPlanesInOrder) {
  for (const Row& row : kRows) {
    EnvMap env;
    if (*row.cpu_operations) env["KOROVOD_CPU_OPERATIONS"] = row.cpu_operations;
    for (const char* hierarchical : {"0", "1"}) {
      env["HOROVOD_HIERARCHICAL_ALLREDUCE"] = hierarchical;
      const std::string label = fmt::format("{} start, cpu={:?}, hierarchical={}",
                                            row.control == kMpi ? "MPI" : "TCP", row.cpu_operations, hierarchical);
      EXPECT_EQ(plan_of(env, row.control, false), row.cpu_only) << label;
      EXPECT_EQ(plan_of(env, row.control, true), row.with_nccl) << label;
    }
  }
}

TEST(DataPlanePlan, MpiOperationsWithoutMpiIsRefusedNamingTheVariable) {
  for (const char* name : {"KOROVOD_CPU_OPERATIONS", "HOROVOD_CPU_OPERATIONS"}) {
    for (bool nccl : {false, true}) {
      const std::string got = plan_of({{name, "MPI"}}, kTcp, nccl);
      EXPECT_NE(got.find("error: KOROVOD_CPU_OPERATIONS=mpi, but the runtime was started without MPI"),
                std::string::npos)
          << name << ": " << got;
    }
  }
  EXPECT_FALSE(check_data_planes(config_from({{"KOROVOD_CPU_OPERATIONS", "mpi"}}), kTcp).is_ok());
  EXPECT_TRUE(check_data_planes(config_from({{"KOROVOD_CPU_OPERATIONS", "mpi"}}), kMpi).is_ok());
  EXPECT_TRUE(check_data_planes(config_from({}), kTcp).is_ok());
}

TEST(DataPlanePlan, HorovodNamesChooseTooAndKorovodNamesWin) {
  EXPECT_EQ(plan_of({{"HOROVOD_CPU_OPERATIONS", "mpi"}}, kMpi, false), "MPI");
  EXPECT_EQ(plan_of({{"HOROVOD_CPU_OPERATIONS", "mpi"}, {"KOROVOD_CPU_OPERATIONS", "tcp"}}, kMpi, false), "TCP, MPI");
  // Horovod's Gloo and oneCCL planes do not exist here: refused, not silently replaced.
  for (const char* other : {"gloo", "ccl"}) {
    Result<Config> c = parse_config({{"HOROVOD_CPU_OPERATIONS", other}});
    ASSERT_FALSE(c.is_ok()) << other;
    EXPECT_NE(c.status().message().find("HOROVOD_CPU_OPERATIONS"), std::string::npos) << c.status().message();
  }
}

TEST(DataPlanePlan, ShmIsForcedOnlyWhenAskedFor) {
  for (ControlPlaneKind control : {kMpi, kTcp}) {
    EXPECT_TRUE(plan_data_planes(config_from({{"KOROVOD_CPU_OPERATIONS", "shm"}}), control, false)->shm_forced);
    EXPECT_FALSE(plan_data_planes(config_from({}), control, false)->shm_forced);
  }
}

TEST(DataPlanePlan, HierarchicalAllreduceCrossesHostsOnTheControlPlanesOwnDataPlane) {
  const Config hier = config_from({{"HOROVOD_HIERARCHICAL_ALLREDUCE", "1"}});
  const Config tcp_hier = config_from({{"KOROVOD_HIERARCHICAL_ALLREDUCE", "yes"}, {"KOROVOD_CPU_OPERATIONS", "tcp"}});
  EXPECT_TRUE(plan_data_planes(hier, kMpi, true)->hierarchical_allreduce);
  EXPECT_FALSE(plan_data_planes(config_from({}), kMpi, true)->hierarchical_allreduce);
  EXPECT_EQ(plan_data_planes(hier, kMpi, true)->fallback(), DataPlane::kMpi);
  EXPECT_EQ(plan_data_planes(tcp_hier, kMpi, true)->fallback(), DataPlane::kMpi);  // TCP plane listed, MPI last
  EXPECT_EQ(plan_data_planes(hier, kTcp, true)->fallback(), DataPlane::kTcp);
  EXPECT_EQ(plan_data_planes(tcp_hier, kTcp, false)->fallback(), DataPlane::kTcp);
}

TEST(DataPlanePlan, TcpPlaneSharesItsSecretOverMpiOnly) {
  const Config tcp = config_from({{"KOROVOD_CPU_OPERATIONS", "tcp"}});
  EXPECT_TRUE(plan_data_planes(tcp, kMpi, false)->tcp_shares_secret);
  EXPECT_FALSE(plan_data_planes(tcp, kTcp, false)->tcp_shares_secret);  // the job's own secret
  EXPECT_FALSE(plan_data_planes(config_from({}), kTcp, false)->tcp_shares_secret);
  EXPECT_FALSE(plan_data_planes(config_from({}), kMpi, false)->tcp_shares_secret);  // no TCP plane
}

TEST(DataPlanePlan, GpuOperationsReachThePlanUnderEitherStart) {
  for (ControlPlaneKind control : {kMpi, kTcp}) {
    EXPECT_EQ(plan_data_planes(config_from({}), control, true)->gpu_operations, GpuOperations::kAuto);
    EXPECT_EQ(plan_data_planes(config_from({{"KOROVOD_GPU_OPERATIONS", "nccl"}}), control, true)->gpu_operations,
              GpuOperations::kNccl);
    // Horovod's HOROVOD_GPU_OPERATIONS=MPI moves GPU tensors through host memory: staging.
    EXPECT_EQ(plan_data_planes(config_from({{"HOROVOD_GPU_OPERATIONS", "MPI"}}), control, true)->gpu_operations,
              GpuOperations::kStaging);
  }
}

std::vector<std::string> built_names(const EnvMap& env, std::shared_ptr<BackendProvider> mpi_backends) {
  auto world = std::make_shared<fake::FakeWorld>(2);
  auto transport = std::make_shared<fake::FakeTransportProvider>(world, 0);
  Result<std::vector<std::shared_ptr<BackendProvider>>> built =
      build_data_planes(config_from(env), ControlPlane::over_mpi(transport, std::move(mpi_backends), "host-a", {"machine", "boot"}, nullptr));
  if (!built.is_ok()) return {"error: " + built.status().message()};
  std::vector<std::string> names;
  for (const auto& p : *built) names.push_back(p->name());
  return names;
}

#ifdef KOROVOD_HAVE_NCCL
const std::vector<std::string> kGpu = {"NCCL"};
#else
const std::vector<std::string> kGpu = {};
#endif

std::vector<std::string> gpu_then(std::vector<std::string> rest) {
  std::vector<std::string> all = kGpu;
  all.insert(all.end(), rest.begin(), rest.end());
  return all;
}

TEST(BuildDataPlanes, ProvidersFollowThePlanWithTheControlPlanesOwnLast) {
  auto world = std::make_shared<fake::FakeWorld>(2);
  auto own = std::make_shared<fake::FakeBackendProvider>(world, 0);  // stands in for MPI's
  EXPECT_EQ(built_names({}, own), gpu_then({"SHM", "FAKE"}));
  EXPECT_EQ(built_names({{"KOROVOD_CPU_OPERATIONS", "tcp"}}, own), gpu_then({"TCP", "FAKE"}));
  EXPECT_EQ(built_names({{"KOROVOD_CPU_OPERATIONS", "mpi"}}, own), gpu_then({"FAKE"}));
}

TEST(BuildDataPlanes, AnMpiStartWithoutMpisDataPlaneIsAnError) {
  const std::vector<std::string> got = built_names({}, nullptr);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], "error: the FAKE control plane brought no MPI data plane");
}

}  // namespace
}  // namespace korovod
