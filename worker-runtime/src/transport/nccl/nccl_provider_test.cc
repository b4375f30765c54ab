// The choice between NCCL and host staging in an NCCL build, as far as it can be checked without
// a GPU: the setup verdict that names ranks sharing a GPU (NCCL would refuse them), the provider
// building a StagingBackend on the set's host plane when staging is forced, and rank 0's startup
// line saying so. The staged collectives themselves: rt_staging_test (fake GPU) and worker-runtime/tests/gpu/.
#include <gtest/gtest.h>

#include <numeric>

#include "algorithms/executor.h"
#include "core/testing/test_ranks.h"
#include "korovod/runtime.h"
#include "transport/common/gpu_plane.h"
#include "transport/fake/fake_world.h"
#include "transport/nccl/nccl_backend.h"
#include "transport/nccl/nccl_provider.h"

namespace korovod::nccl {
namespace {

std::string ok(const std::string& host, const std::string& gpu) { return "ok " + gpu_identity_line({host, gpu}); }

TEST(NcclSetupVerdict, RanksSharingAGpuAreNamedBeforeNcclRefusesThem) {
  const std::string id(128, 'i');
  EXPECT_EQ(setup_verdict({ok("a", "0000:01:00.0"), ok("a", "0000:02:00.0"), ok("b", "0000:01:00.0")}, id), "ok" + id);
  const std::string shared =
      setup_verdict({ok("a", "0000:01:00.0"), ok("b", "0000:01:00.0"), ok("a", "0000:01:00.0")}, id);
  EXPECT_EQ(shared.rfind("err NCCL setup of the process set failed: ranks 0 and 2 share GPU 0000:01:00.0", 0), 0u)
      << shared;
  EXPECT_NE(shared.find("KOROVOD_GPU_OPERATIONS=staging"), std::string::npos) << shared;
  const std::string failed = setup_verdict({ok("a", "x"), "err no NVIDIA GPU usable: cudaGetDeviceCount: ..."}, id);
  EXPECT_EQ(failed,
            "err NCCL setup of the process set failed on rank 1: no NVIDIA GPU usable: cudaGetDeviceCount: ...");
}

// Each rank's provider builds its GPU backend for the set {0, 1} over the fake transport.
std::vector<std::unique_ptr<Backend>> gpu_backends(GpuOperations mode) {
  const int n = 2;
  auto world = std::make_shared<fake::FakeWorld>(n, std::chrono::seconds(10));
  std::vector<std::unique_ptr<Backend>> out(n);
  testing::run_ranks(n, [&](int rank) {
    NcclBackendProvider provider(std::make_shared<fake::FakeTransportProvider>(world, rank), rank, {},
                                 GpuPlaneOptions{mode, "one host"});
    Result<std::unique_ptr<Backend>> b = provider.create_backend({0, 1}, 0);
    ASSERT_TRUE(b.is_ok()) << b.status().to_string();
    out[rank] = std::move(b).value();
  });
  return out;
}

TEST(NcclProvider, ForcedStagingBuildsAStagingBackendThatNamesTheReason) {
  std::vector<std::unique_ptr<Backend>> backends = gpu_backends(GpuOperations::kStaging);
  for (const auto& b : backends) {
    EXPECT_TRUE(b->enabled(0));
    EXPECT_FALSE(b->enabled(kCpuDevice));
    EXPECT_EQ(b->size(), 2);
    EXPECT_EQ(b->description().rfind("host staging through no host data plane (KOROVOD_GPU_OPERATIONS=staging; ", 0),
              0u)
        << b->description();
  }
  EXPECT_EQ(backends[1]->rank(), 1);
}

TEST(NcclProvider, WithoutSharedGpusOrWhenForcedItIsNccl) {
  for (GpuOperations mode : {GpuOperations::kAuto, GpuOperations::kNccl}) {
    for (const auto& b : gpu_backends(mode)) EXPECT_EQ(b->name(), "NCCL");
  }
  auto transport = std::make_shared<fake::FakeTransportProvider>(std::make_shared<fake::FakeWorld>(1), 0);
  EXPECT_NE(NcclBackendProvider(transport, 0, {}, {GpuOperations::kNccl, "h"}).description().find(
                "; KOROVOD_GPU_OPERATIONS=nccl)"),
            std::string::npos);
  EXPECT_EQ(NcclBackendProvider(transport, 0).description().find("KOROVOD_GPU_OPERATIONS"), std::string::npos);
}

TEST(NcclProvider, StagedThroughTheSetsHostPlaneAndNamedInTheStartupLine) {
  const int n = 2;
  auto world = std::make_shared<fake::FakeWorld>(n, std::chrono::seconds(10));
  std::vector<std::string> rank0_log;
  testing::run_ranks(n, [&](int rank) {
    RuntimeOptions o;
    o.make_executor = make_executor;
    o.config.cycle_time_ms = 0.5;
    o.config.log_level = LogLevel::kWarning;
    if (rank == 0) o.log_sink = [&](LogLevel, const std::string& line) { rank0_log.push_back(line); };
    auto transport = std::make_shared<fake::FakeTransportProvider>(world, rank);
    o.transport = transport;
    o.backends.push_back(std::make_shared<NcclBackendProvider>(transport, rank, NcclHierarchy{},
                                                               GpuPlaneOptions{GpuOperations::kStaging, "h"}));
    o.backends.push_back(std::make_shared<fake::FakeBackendProvider>(world, rank));
    Result<std::unique_ptr<Runtime>> rt = Runtime::create(std::move(o));
    ASSERT_TRUE(rt.is_ok()) << rt.status().to_string();
    // Host memory posing as a GPU tensor: with CUDA but no GPU, the CUDA copier cannot tell what
    // it is and says so (every rank alike); where a GPU exists it is plain host memory, staged
    // through nothing, and reduced.
    std::vector<float> x(4, rank + 1.f);
    const TensorView view{x.data(), DataType::kFloat32, {4}, /*device=*/0};
    Result<Handle> h = (*rt)->allreduce("host.as.gpu", view, view, ReduceOp::kSum);
    ASSERT_TRUE(h.is_ok());
    const Status s = (*rt)->wait(*h);
    if (visible_gpus().is_ok()) {
      EXPECT_TRUE(s.is_ok()) << s.to_string();
      EXPECT_EQ(x, std::vector<float>(4, 3.f));
    } else {
      EXPECT_EQ(s.code(), StatusCode::kUnknownError) << s.to_string();
      EXPECT_NE(s.message().find("host staging of a GPU allreduce: cudaPointerGetAttributes"), std::string::npos)
          << s.message();
    }
    (void)(*rt)->shutdown();
  });
  ASSERT_FALSE(rank0_log.empty());
  EXPECT_NE(rank0_log[0].find("GPU data plane: host staging through FAKE (KOROVOD_GPU_OPERATIONS=staging; "),
            std::string::npos)
      << rank0_log[0];
}

}  // namespace
}  // namespace korovod::nccl
