// The C ABI (korovod/c_api.h) without MPI or a launcher, part 1: library queries, launch
// detection, init options, the one-rank world, shutdown -> init, per-thread errors, threads,
// process sets, timeline (rt_capi_test). Operations: c_api_ops_test.cc; several ranks (MPI and
// TCP worlds): worker-runtime/tests/capi/capi_check_main.cc.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#ifdef KOROVOD_HAVE_NCCL
#include <nccl.h>
#endif

#include "capi/dlpack.h"
#include "capi/mpi_loader.h"
#include "capi/testing/capi_test_util.h"

namespace korovod::capi_test {
namespace {

namespace dl = korovod::dlpack;

TEST(CApiLibrary, VersionAndBuildQueries) {
  // "X.Y.Z" (no std::regex: GCC 12 warns inside it under the sanitizers).
  int major = -1, minor = -1, patch = -1, consumed = 0;
  const std::string version = korovod_version();
  EXPECT_EQ(std::sscanf(version.c_str(), "%d.%d.%d%n", &major, &minor, &patch, &consumed), 3) << version;
  EXPECT_EQ(static_cast<size_t>(consumed), version.size()) << version;
  char why[512] = "x";
#ifdef KOROVOD_TEST_MPI_BUILT
  EXPECT_EQ(korovod_mpi_built(), 1);  // libkorovod_mpi.so is built next to libkorovod.so
  EXPECT_EQ(korovod_mpi_available(why, sizeof why), 1) << why;
  EXPECT_STREQ(why, "");
#else
  EXPECT_EQ(korovod_mpi_built(), 0);  // a build without MPI: no libkorovod_mpi.so
  EXPECT_EQ(korovod_mpi_available(why, sizeof why), 0);
  EXPECT_NE(std::string(why).find("libkorovod_mpi.so"), std::string::npos) << why;
#endif
  EXPECT_EQ(korovod_gloo_built(), 1);  // the TCP control plane: Horovod's Gloo mode
#ifdef KOROVOD_HAVE_NCCL
  EXPECT_EQ(korovod_nccl_built(), NCCL_VERSION_CODE);
  EXPECT_EQ(korovod_cuda_built(), 1);
#else
  EXPECT_EQ(korovod_nccl_built(), 0);
  EXPECT_EQ(korovod_cuda_built(), 0);
#endif
  EXPECT_EQ(korovod_rank(nullptr), -1);
  EXPECT_EQ(korovod_size(nullptr), -1);
  EXPECT_EQ(korovod_is_initialized(nullptr), 0);
}

TEST(CApiLibrary, LaunchDetectionNamesTheLauncherVariable) {
  using korovod::capi::mpi_launch_variable;
  EXPECT_EQ(mpi_launch_variable({}), "");
  EXPECT_EQ(mpi_launch_variable({{"SLURM_PROCID", "0"}, {"KOROVOD_RANK", "1"}}), "");
  EXPECT_EQ(mpi_launch_variable({{"OMPI_COMM_WORLD_SIZE", "4"}}), "OMPI_COMM_WORLD_SIZE");
  EXPECT_EQ(mpi_launch_variable({{"PMIX_RANK", "0"}}), "PMIX_RANK");
  EXPECT_EQ(mpi_launch_variable({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}}), "PMI_RANK");
  EXPECT_EQ(mpi_launch_variable({{"PMI_SIZE", "2"}}), "PMI_SIZE");
  EXPECT_EQ(mpi_launch_variable({{"MPI_LOCALNRANKS", "2"}}), "MPI_LOCALNRANKS");
  EXPECT_EQ(mpi_launch_variable({{"OMPI_COMM_WORLD_SIZE", ""}}), "");  // set but empty
  for (const char* v : kLaunchVariables) unsetenv(v);
  EXPECT_EQ(korovod_launched_by_mpi(), 0);
  setenv("PMI_RANK", "0", 1);
  EXPECT_EQ(korovod_launched_by_mpi(), 1);
  unsetenv("PMI_RANK");
}

TEST(CApiLibrary, InitOptionsThatCannotWorkFailWithTheReason) {
  for (const char* v : kLaunchVariables) unsetenv(v);
  korovod_runtime* rt = reinterpret_cast<korovod_runtime*>(1);
  char err[512] = "";
  korovod_init_options o{};
  o.controller = KOROVOD_CONTROLLER_TCP;  // without the rendezvous variables
  EXPECT_EQ(korovod_init_ex(&rt, &o, err, sizeof err), KOROVOD_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(rt, nullptr);
  EXPECT_NE(std::string(err).find("KOROVOD_RENDEZVOUS_ADDR"), std::string::npos) << err;
  o.controller = 42;
  EXPECT_EQ(korovod_init_ex(&rt, &o, err, sizeof err), KOROVOD_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err).find("unknown controller 42"), std::string::npos) << err;
  const int32_t ranks[] = {0};
  o.controller = KOROVOD_CONTROLLER_TCP;
  o.comm_ranks = ranks;
  o.num_comm_ranks = 1;
  EXPECT_EQ(korovod_init_ex(&rt, &o, err, sizeof err), KOROVOD_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err).find("needs the MPI controller"), std::string::npos) << err;
  const int32_t sizes[] = {-1};
  korovod_init_options bad_sets{};
  bad_sets.set_ranks = ranks;
  bad_sets.set_sizes = sizes;
  bad_sets.num_sets = 1;
  EXPECT_EQ(korovod_init_ex(&rt, &bad_sets, err, sizeof err), KOROVOD_ERR_INVALID_ARGUMENT);
  char tiny[4];
  EXPECT_EQ(korovod_init_ex(&rt, &bad_sets, tiny, sizeof tiny), KOROVOD_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(std::strlen(tiny), 3u);  // truncated, NUL-terminated
  EXPECT_EQ(korovod_init_ex(nullptr, nullptr, err, sizeof err), KOROVOD_ERR_INVALID_ARGUMENT);
}

TEST_F(CApi, OneRankWorldWithoutLauncher) {
  EXPECT_EQ(korovod_is_initialized(rt_), 1);
  EXPECT_EQ(korovod_rank(rt_), 0);
  EXPECT_EQ(korovod_size(rt_), 1);
  EXPECT_EQ(korovod_local_rank(rt_), 0);
  EXPECT_EQ(korovod_local_size(rt_), 1);
  EXPECT_EQ(korovod_cross_rank(rt_), 0);
  EXPECT_EQ(korovod_cross_size(rt_), 1);
  EXPECT_EQ(korovod_is_homogeneous(rt_), 1);
  EXPECT_EQ(korovod_mpi_enabled(rt_), 0);
  EXPECT_STREQ(korovod_transport_name(rt_), "TCP");
#ifdef KOROVOD_HAVE_NCCL
  EXPECT_STREQ(korovod_backend_names(rt_), "NCCL,SHM,TCP");  // NCCL for GPU tensors, without MPI too
#else
  EXPECT_STREQ(korovod_backend_names(rt_), "SHM,TCP");
#endif
  EXPECT_STREQ(korovod_last_error(rt_), "");
}

TEST_F(CApi, CudaEventWithoutAGpuIsAnErrorWithItsReason) {
  char err[512] = "";
  korovod_event* e = korovod_cuda_event_record(0, nullptr, err, sizeof err);
  if (e) {
    korovod_event_free(e);
    // korovod.torch records its ready events with this call.
    GTEST_SKIP() << "a GPU is usable here: korovod_cuda_event_record on a GPU is covered by "
                    "tests/gpu/python/test_torch_gpu.py::test_ready_event_on_a_side_stream";
  }
  EXPECT_GT(std::strlen(err), 0u);
}

TEST_F(CApi, LastErrorIsPerThread) {
  std::vector<float> x(2, 1.f);
  Op bad;
  bad.input = x.data();
  bad.shape = {2};
  bad.type = 11;
  ASSERT_LT(bad.enqueue(rt_), 0);
  std::thread other([&] {
    Op bad2 = bad;
    bad2.type = 12;
    EXPECT_STREQ(korovod_last_error(rt_), "");  // this thread has not failed yet
    ASSERT_LT(bad2.enqueue(rt_), 0);
    EXPECT_NE(std::string(korovod_last_error(rt_)).find("type 12"), std::string::npos);
  });
  other.join();
  EXPECT_NE(std::string(korovod_last_error(rt_)).find("type 11"), std::string::npos) << korovod_last_error(rt_);
}

TEST_F(CApi, ThreadsEnqueueAndWaitAtOnce) {
  constexpr int kThreads = 4, kOps = 40;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kOps; ++i) {
        std::vector<float> v(16, static_cast<float>(t + i));
        const std::string name = "t" + std::to_string(t) + "." + std::to_string(i);
        Op op;
        op.name = name.c_str();
        op.input = v.data();
        op.shape = {16};
        const int64_t h = op.enqueue(rt_);
        if (h <= 0 || korovod_wait(rt_, h) != KOROVOD_OK || v[15] != static_cast<float>(t + i)) ++failures;
        korovod_release(rt_, h);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST_F(CApi, InitShutdownInitAndCallsAfterShutdown) {
  std::vector<float> x(8, 1.f);
  Op g;
  g.type = KOROVOD_OP_ALLGATHER;
  g.input = x.data();
  g.shape = {8};
  const int64_t h = g.enqueue(rt_);
  done(h);
  ASSERT_EQ(korovod_shutdown(rt_), KOROVOD_OK);
  EXPECT_EQ(korovod_shutdown(rt_), KOROVOD_OK);  // idempotent
  EXPECT_EQ(korovod_is_initialized(rt_), 0);
  EXPECT_EQ(korovod_rank(rt_), 0);  // queries answer after shutdown
  EXPECT_EQ(korovod_size(rt_), 1);
  EXPECT_STREQ(korovod_transport_name(rt_), "TCP");
  EXPECT_EQ(g.enqueue(rt_), KOROVOD_ERR_NOT_INITIALIZED);
  EXPECT_NE(std::string(korovod_last_error(rt_)).find("not initialised"), std::string::npos);
  EXPECT_EQ(korovod_wait(rt_, h), KOROVOD_ERR_NOT_INITIALIZED);
  EXPECT_EQ(korovod_process_set_ids(rt_, nullptr, 0), KOROVOD_ERR_NOT_INITIALIZED);
  // An output that finished before shutdown can still be taken.
  auto* m = static_cast<dl::ManagedTensor*>(korovod_handle_take_dlpack(rt_, h, dl::kDLFloat, 32));
  ASSERT_NE(m, nullptr) << korovod_last_error(rt_);
  korovod_release(rt_, h);
  for (int cycle = 0; cycle < 3; ++cycle) {
    korovod_runtime* again = init();
    ASSERT_NE(again, nullptr);
    std::vector<float> y(4, 2.f);
    Op r;
    r.input = y.data();
    r.shape = {4};
    const int64_t hr = r.enqueue(again);
    ASSERT_GT(hr, 0) << korovod_last_error(again);
    EXPECT_EQ(korovod_wait(again, hr), KOROVOD_OK);
    EXPECT_EQ(korovod_shutdown(again), KOROVOD_OK);
    korovod_destroy(again);
  }
  EXPECT_EQ(static_cast<float*>(m->dl_tensor.data)[7], 1.f);
  korovod_dlpack_delete(m);
  korovod_destroy(nullptr);
}

TEST_F(CApi, ProcessSetQueries) {
  int ids[4] = {-1, -1, -1, -1};
  ASSERT_EQ(korovod_process_set_ids(rt_, ids, 4), 1);
  EXPECT_EQ(ids[0], 0);
  int ranks[4] = {-1};
  ASSERT_EQ(korovod_process_set_ranks(rt_, 0, ranks, 4), 1);
  EXPECT_EQ(ranks[0], 0);
  EXPECT_EQ(korovod_process_set_rank(rt_, 0), 0);
  EXPECT_EQ(korovod_process_set_size(rt_, 0), 1);
  EXPECT_EQ(korovod_process_set_included(rt_, 0), 1);
  EXPECT_EQ(korovod_process_set_size(rt_, 5), KOROVOD_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(korovod_process_set_ranks(rt_, 5, ranks, 4), KOROVOD_ERR_INVALID_ARGUMENT);
  const int zero[] = {0};
  // Dynamic sets are off unless KOROVOD_DYNAMIC_PROCESS_SETS=1 (the multi-rank check turns them on).
  EXPECT_EQ(korovod_add_process_set(rt_, zero, 1), KOROVOD_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(korovod_last_error(rt_)).find("KOROVOD_DYNAMIC_PROCESS_SETS"), std::string::npos);
  EXPECT_EQ(korovod_remove_process_set(rt_, 0), KOROVOD_ERR_INVALID_ARGUMENT);
}

TEST_F(CApi, TimelineFromTheAbi) {
  const std::string path = ::testing::TempDir() + "capi_timeline.json";
  ASSERT_EQ(korovod_start_timeline(rt_, path.c_str(), 0), KOROVOD_OK) << korovod_last_error(rt_);
  std::vector<float> x(4, 1.f);
  Op op;
  op.name = "timed";
  op.input = x.data();
  op.shape = {4};
  done(op.enqueue(rt_));
  ASSERT_EQ(korovod_stop_timeline(rt_), KOROVOD_OK);
  FILE* f = std::fopen(path.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::string content(1 << 16, '\0');
  content.resize(std::fread(content.data(), 1, content.size(), f));
  std::fclose(f);
  std::remove(path.c_str());
  EXPECT_NE(content.find("timed"), std::string::npos) << content.substr(0, 400);
}

}  // namespace
}  // namespace korovod::capi_test
