// HandleTable's timed wait on a fake Env: it returns in progress once the Env's time passed the
// timeout, not before, and at once when the operation completes -- without waiting 30 s.
#include "core/handle_table.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "core/testing/fake_env.h"

namespace korovod {
namespace {

using namespace std::chrono_literals;
using testing::FakeEnv;

TEST(HandleTable, TimedWaitEndsAtTheTimeoutByTheEnvsTime) {
  FakeEnv env;
  HandleTable table(env);
  const Handle h = table.create(nullptr);
  const auto real_start = std::chrono::steady_clock::now();
  auto waited = std::async(std::launch::async, [&] { return table.wait(h, 30.0); });
  env.await_waiter();  // its deadline is taken: 30 s from now
  env.advance(29s);
  EXPECT_EQ(waited.wait_for(50ms), std::future_status::timeout) << "returned before the timeout";
  env.advance(999ms);
  EXPECT_EQ(waited.wait_for(50ms), std::future_status::timeout) << "returned 1 ms before the timeout";
  env.advance(1ms);
  ASSERT_EQ(waited.wait_for(5s), std::future_status::ready) << "did not return at the timeout";
  EXPECT_EQ(waited.get().code(), StatusCode::kInProgress);
  EXPECT_LT(std::chrono::steady_clock::now() - real_start, 5s) << "waited in real time";
  // Still pending: a later completion is reported to the next wait.
  EXPECT_TRUE(table.complete(h, Status::ok()));
  EXPECT_TRUE(table.wait(h, 30.0).is_ok());
}

TEST(HandleTable, TimedWaitReturnsWhenTheOperationCompletes) {
  FakeEnv env;
  HandleTable table(env);
  const Handle h = table.create(nullptr);
  auto waited = std::async(std::launch::async, [&] { return table.wait(h, 30.0); });
  EXPECT_EQ(waited.wait_for(30ms), std::future_status::timeout);
  EXPECT_TRUE(table.complete(h, Status::aborted("peer lost")));
  ASSERT_EQ(waited.wait_for(5s), std::future_status::ready) << "the completion did not end the wait";
  const Status st = waited.get();
  EXPECT_EQ(st.code(), StatusCode::kAborted);
  EXPECT_EQ(st.message(), "peer lost");
}

}  // namespace
}  // namespace korovod
