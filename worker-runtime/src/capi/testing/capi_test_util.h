// Shared by the C ABI unit tests (c_api_test.cc, c_api_ops_test.cc): one korovod_enqueue
// call as a struct with defaults, a ready event the test controls, and a fixture that starts a
// world of one rank the way `python train.py` does (no launcher, no MPI, no network).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <memory>
#include <vector>

#include "capi/capi_internal.h"
#include "korovod/c_api.h"

namespace korovod::capi_test {

// The variables that would make init pick another controller than the one-rank world.
inline constexpr const char* kLaunchVariables[] = {
    "KOROVOD_RENDEZVOUS_ADDR", "HOROVOD_GLOO_RENDEZVOUS_ADDR", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK",
    "PMI_RANK",                "PMI_SIZE",                     "MPI_LOCALNRANKS"};

// One korovod_enqueue / korovod_group_add call, with defaults for what an op does not use.
struct Op {
  int type = KOROVOD_OP_ALLREDUCE;
  const char* name = nullptr;
  void* input = nullptr;
  void* output = nullptr;
  int dtype = KOROVOD_FLOAT32;
  std::vector<int64_t> shape;
  int device = -1;
  int op = KOROVOD_SUM;
  double prescale = 1.0, postscale = 1.0;
  int root_rank = 0;
  std::vector<int32_t> splits;
  int process_set = 0;
  korovod_event* ready = nullptr;

  int64_t enqueue(korovod_runtime* rt) const {
    return korovod_enqueue(rt, type, name, input, output, dtype, static_cast<int>(shape.size()), shape.data(), device,
                           op, prescale, postscale, root_rank, splits.empty() ? nullptr : splits.data(),
                           static_cast<int>(splits.size()), process_set, ready);
  }
  int add_to(korovod_group* g) const {
    return korovod_group_add(g, type, name, input, output, dtype, static_cast<int>(shape.size()), shape.data(),
                             device, op, prescale, postscale, root_rank, splits.empty() ? nullptr : splits.data(),
                             static_cast<int>(splits.size()), process_set, ready);
  }
};

// A ReadyEvent the test controls; counts its destructions (the C ABI must consume events).
struct TestEvent final : korovod::ReadyEvent {
  TestEvent(std::atomic<bool>* ready, std::atomic<int>* destroyed) : ready_(ready), destroyed_(destroyed) {}
  ~TestEvent() override { ++*destroyed_; }
  korovod::Result<bool> ready() const override { return ready_->load(); }
  std::atomic<bool>* ready_;
  std::atomic<int>* destroyed_;
};

inline korovod_event* test_event(std::atomic<bool>* ready, std::atomic<int>* destroyed) {
  return new korovod_event{std::make_shared<TestEvent>(ready, destroyed)};
}

class CApi : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : kLaunchVariables) unsetenv(v);
    unsetenv("KOROVOD_DYNAMIC_PROCESS_SETS");
    setenv("KOROVOD_LOG_LEVEL", "error", 1);
    rt_ = init();
    ASSERT_NE(rt_, nullptr);
  }
  void TearDown() override { korovod_destroy(rt_); }

  static korovod_runtime* init(const korovod_init_options* options = nullptr) {
    korovod_runtime* rt = nullptr;
    char err[512] = "";
    const int rc = korovod_init_ex(&rt, options, err, sizeof err);
    EXPECT_EQ(rc, KOROVOD_OK) << err;
    return rt;
  }

  // Waits for `h` (> 0) and expects success.
  void done(int64_t h) {
    ASSERT_GT(h, 0) << korovod_last_error(rt_);
    ASSERT_EQ(korovod_wait(rt_, h), KOROVOD_OK) << korovod_handle_error(rt_, h);
  }

  korovod_runtime* rt_ = nullptr;
};

}  // namespace korovod::capi_test
