// The NCCL backend as far as it can be checked without a GPU (built and linked against NCCL
// and the CUDA runtime): dtype and op mapping, error conversion, enablement, and the clear
// error every rank gets when no GPU is usable. The collectives on GPUs: worker-runtime/tests/gpu/.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>

#include "core/testing/test_ranks.h"
#include "transport/fake/fake_world.h"
#include "transport/nccl/nccl_backend.h"
#include "transport/nccl/nccl_mapping.h"
#include "transport/nccl/nccl_provider.h"

namespace korovod::nccl {
namespace {

TEST(NcclMapping, EveryTypeNcclHasMaps) {
  const std::pair<DataType, ncclDataType_t> expected[] = {
      {DataType::kUInt8, ncclUint8},     {DataType::kInt8, ncclInt8},       {DataType::kInt32, ncclInt32},
      {DataType::kInt64, ncclInt64},     {DataType::kFloat16, ncclFloat16}, {DataType::kFloat32, ncclFloat32},
      {DataType::kFloat64, ncclFloat64}, {DataType::kBFloat16, ncclBfloat16}};
  for (const auto& [dtype, type] : expected) {
    Result<ncclDataType_t> mapped = nccl_dtype(dtype);
    ASSERT_TRUE(mapped.is_ok()) << dtype_name(dtype);
    EXPECT_EQ(*mapped, type) << dtype_name(dtype);
  }
}

TEST(NcclMapping, TypesNcclLacksAreAnErrorNamingTheDtype) {
  for (DataType dtype : {DataType::kUInt16, DataType::kInt16, DataType::kBool}) {
    Result<ncclDataType_t> mapped = nccl_dtype(dtype);
    ASSERT_FALSE(mapped.is_ok()) << dtype_name(dtype);
    EXPECT_EQ(mapped.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(mapped.status().message().find(std::string(dtype_name(dtype)) + " tensors"), std::string::npos)
        << mapped.status().message();
  }
}

TEST(NcclMapping, ReduceOpsIncludingAverageAndNoAdasum) {
  EXPECT_EQ(*nccl_reduce_op(ReduceOp::kSum, DataType::kFloat32), ncclSum);
  EXPECT_EQ(*nccl_reduce_op(ReduceOp::kMin, DataType::kFloat32), ncclMin);
  EXPECT_EQ(*nccl_reduce_op(ReduceOp::kMax, DataType::kFloat32), ncclMax);
  EXPECT_EQ(*nccl_reduce_op(ReduceOp::kProduct, DataType::kFloat32), ncclProd);
  EXPECT_EQ(*nccl_reduce_op(ReduceOp::kAverage, DataType::kInt32), ncclAvg);
  Result<ncclRedOp_t> adasum = nccl_reduce_op(ReduceOp::kAdasum, DataType::kBFloat16);
  ASSERT_FALSE(adasum.is_ok());
  EXPECT_NE(adasum.status().message().find("ADASUM"), std::string::npos) << adasum.status().message();
  EXPECT_NE(adasum.status().message().find("bfloat16"), std::string::npos) << adasum.status().message();
}

template <typename T>
T scalar_as(const PreMulScalar& s) {
  T v;
  std::memcpy(&v, s.bytes, sizeof v);
  return v;
}

TEST(NcclMapping, PreMulScalarIsEncodedInTheTensorsType) {
  EXPECT_EQ(scalar_as<uint16_t>(*premul_scalar(DataType::kFloat16, 0.5)), 0x3800);   // 0.5 in IEEE half
  EXPECT_EQ(scalar_as<uint16_t>(*premul_scalar(DataType::kBFloat16, 0.5)), 0x3F00);  // 0.5 in bfloat16
  EXPECT_EQ(scalar_as<float>(*premul_scalar(DataType::kFloat32, 0.25)), 0.25f);
  EXPECT_EQ(scalar_as<double>(*premul_scalar(DataType::kFloat64, 1.0 / 3)), 1.0 / 3);
  Result<PreMulScalar> integer = premul_scalar(DataType::kInt32, 0.5);
  ASSERT_FALSE(integer.is_ok());
  EXPECT_NE(integer.status().message().find("int32"), std::string::npos) << integer.status().message();
}

TEST(NcclErrors, NcclAndCudaErrorsBecomeStatusWithTheirStrings) {
  EXPECT_TRUE(nccl_status(ncclSuccess, "ncclAllReduce").is_ok());
  Status nccl = nccl_status(ncclInvalidArgument, "ncclAllReduce");
  EXPECT_EQ(nccl.code(), StatusCode::kUnknownError);
  EXPECT_EQ(nccl.message(), std::string("ncclAllReduce: ") + ncclGetErrorString(ncclInvalidArgument));
  EXPECT_TRUE(cuda_status(cudaSuccess, "cudaMalloc").is_ok());
  Status cuda = cuda_status(cudaErrorInvalidValue, "cudaMalloc");
  EXPECT_EQ(cuda.code(), StatusCode::kUnknownError);
  EXPECT_NE(cuda.message().find("cudaMalloc: "), std::string::npos) << cuda.message();
  EXPECT_NE(cuda.message().find("cudaErrorInvalidValue"), std::string::npos) << cuda.message();
}

TEST(NcclErrors, LoadedLibraryIsTheVersionCompiledAgainst) {
  EXPECT_EQ(nccl_version_string(), fmt::format("{}.{}.{}", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH));
  NcclBackendProvider provider(std::make_shared<fake::FakeTransportProvider>(std::make_shared<fake::FakeWorld>(1), 0),
                               0);
  EXPECT_EQ(provider.description().rfind("NCCL " + nccl_version_string() + " (", 0), 0u) << provider.description();
}

TEST(NcclBackend, EnabledForGpuTensorsOnly) {
  auto world = std::make_shared<fake::FakeWorld>(1);
  NcclBackend backend(fake::make_fake_control(world, {0}, 0, "ctl"), 0);
  EXPECT_EQ(backend.name(), "NCCL");
  EXPECT_FALSE(backend.enabled(kCpuDevice));
  EXPECT_TRUE(backend.enabled(0));
  EXPECT_TRUE(backend.enabled(7));
  EXPECT_EQ(backend.size(), 1);
}

TEST(NcclBackend, WithoutAGpuEveryRankGetsTheSameClearErrorAndNoHang) {
  if (visible_gpus().is_ok()) GTEST_SKIP() << "a GPU is visible: tests/gpu/run-gpu-tests covers this machine";
  EXPECT_NE(visible_gpus().status().message().find("cudaGetDeviceCount"), std::string::npos)
      << visible_gpus().status().message();
  const int n = 2;
  auto world = std::make_shared<fake::FakeWorld>(n, std::chrono::seconds(10));
  std::vector<Status> first(n), second(n);
  testing::run_ranks(n, [&](int rank) {
    NcclBackend backend(fake::make_fake_control(world, {0, 1}, rank, "ctl"), rank);
    std::vector<float> x(4, 1.f);
    first[rank] = backend.allreduce(x.data(), x.data(), 4, DataType::kFloat32, ReduceOp::kSum);
    // The failed setup is remembered: no second rendezvous that a peer might not join.
    second[rank] = backend.broadcast(x.data(), 16, 0);
  });
  for (int r = 0; r < n; ++r) {
    ASSERT_FALSE(first[r].is_ok());
    EXPECT_EQ(first[r].code(), StatusCode::kInvalidArgument);  // fails the op, not the engine
    const std::string& m = first[r].message();
    EXPECT_NE(m.find("NCCL setup of the process set failed"), std::string::npos) << m;
    EXPECT_NE(m.find("rank 0: no NVIDIA GPU usable: cudaGetDeviceCount"), std::string::npos) << m;
    EXPECT_NE(m.find("rank 1: no NVIDIA GPU usable"), std::string::npos) << m;
    EXPECT_EQ(second[r].message(), m);
  }
}

}  // namespace
}  // namespace korovod::nccl
