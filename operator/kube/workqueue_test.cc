#include "kube/workqueue.h"

#include <atomic>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "kube/fake_clock.h"

namespace kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

std::unique_ptr<ItemRateLimiter> backoff_only() {
  return std::make_unique<ExponentialBackoff>(milliseconds(5), seconds(1000));
}

class WorkQueueTest : public ::testing::Test {
 protected:
  FakeClock clock;
};

TEST_F(WorkQueueTest, AddDeduplicatesPendingItems) {
  WorkQueue q(clock);
  q.add("a");
  q.add("a");
  q.add("b");
  EXPECT_EQ(q.len(), 2u);
}

TEST_F(WorkQueueTest, GetHandsOutInFifoOrder) {
  WorkQueue q(clock);
  q.add("a");
  q.add("b");
  EXPECT_EQ(q.get(), "a");
  EXPECT_EQ(q.get(), "b");
  EXPECT_EQ(q.len(), 0u);
}

TEST_F(WorkQueueTest, ItemReAddedWhileProcessingIsQueuedAfterDone) {
  WorkQueue q(clock);
  q.add("a");
  ASSERT_EQ(q.get(), "a");
  q.add("a");
  q.add("a");
  EXPECT_EQ(q.len(), 0u);  // not handed to a second worker meanwhile
  q.done("a");
  EXPECT_EQ(q.len(), 1u);
  EXPECT_EQ(q.get(), "a");
  q.done("a");
  EXPECT_EQ(q.len(), 0u);
}

TEST_F(WorkQueueTest, NeverHandsOneKeyToTwoWorkers) {
  WorkQueue q(clock);
  std::mutex mu;
  std::set<std::string> in_flight;
  std::atomic<bool> overlap{false};
  std::atomic<int> handled{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w)
    workers.emplace_back([&] {
      while (auto item = q.get()) {
        {
          std::lock_guard lock(mu);
          if (!in_flight.insert(*item).second) overlap = true;
        }
        std::this_thread::yield();
        {
          std::lock_guard lock(mu);
          in_flight.erase(*item);
        }
        ++handled;
        q.done(*item);
      }
    });
  for (int i = 0; i < 2000; ++i) q.add("key" + std::to_string(i % 3));
  q.shut_down_with_drain();
  for (auto& t : workers) t.join();
  EXPECT_FALSE(overlap.load());
  EXPECT_GE(handled.load(), 3);
}

TEST_F(WorkQueueTest, AddAfterBecomesReadyWhenClockReachesDelay) {
  WorkQueue q(clock);
  q.add_after("a", seconds(1));
  EXPECT_EQ(q.len(), 0u);
  EXPECT_EQ(q.waiting(), 1u);
  clock.advance(milliseconds(999));
  EXPECT_EQ(q.len(), 0u);
  clock.advance(milliseconds(1));
  EXPECT_EQ(q.len(), 1u);
  EXPECT_EQ(q.waiting(), 0u);
}

TEST_F(WorkQueueTest, AddAfterKeepsTheEarliestTime) {
  WorkQueue q(clock);
  q.add_after("a", seconds(10));
  q.add_after("a", seconds(2));
  q.add_after("a", seconds(5));
  EXPECT_EQ(q.waiting(), 1u);
  clock.advance(seconds(2));
  EXPECT_EQ(q.len(), 1u);
}

TEST_F(WorkQueueTest, BlockedGetWakesWhenDelayedItemIsDue) {
  WorkQueue q(clock);
  std::optional<std::string> got;
  std::thread t([&] { got = q.get(); });
  ASSERT_TRUE(clock.wait_for_waiters(1));
  q.add_after("a", seconds(3));  // a sooner deadline than the getter is sleeping for
  clock.advance(seconds(3));
  t.join();
  EXPECT_EQ(got, "a");
}

TEST_F(WorkQueueTest, AddRateLimitedBacksOffPerItemAndForgetResets) {
  WorkQueue q(clock, backoff_only());
  q.add_rate_limited("a");  // 5ms
  clock.advance(milliseconds(5));
  ASSERT_EQ(q.get(), "a");
  q.done("a");
  q.add_rate_limited("a");  // 10ms
  clock.advance(milliseconds(9));
  EXPECT_EQ(q.len(), 0u);
  clock.advance(milliseconds(1));
  EXPECT_EQ(q.len(), 1u);
  EXPECT_EQ(q.num_requeues("a"), 2);
  q.forget("a");
  EXPECT_EQ(q.num_requeues("a"), 0);
}

TEST_F(WorkQueueTest, DefaultLimiterCapsOverallRateWithTokenBucket) {
  WorkQueue q(clock);
  for (int i = 0; i < 101; ++i) q.add_rate_limited("k" + std::to_string(i));
  clock.advance(milliseconds(5));
  EXPECT_EQ(q.len(), 100u);  // the burst
  clock.advance(milliseconds(95));
  EXPECT_EQ(q.len(), 101u);  // the 101st waited for a token (10 qps)
}

TEST_F(WorkQueueTest, ShutDownWakesGettersAndDropsPendingItems) {
  WorkQueue q(clock);
  std::optional<std::string> got = "unset";
  std::thread t([&] { got = q.get(); });
  ASSERT_TRUE(clock.wait_for_waiters(1));
  q.shut_down();
  t.join();
  EXPECT_FALSE(got.has_value());
  q.add("a");  // ignored after shutdown
  EXPECT_FALSE(q.get().has_value());
  EXPECT_TRUE(q.shutting_down());
}

TEST_F(WorkQueueTest, ShutDownWithDrainHandsOutQueuedItemsAndWaitsForDone) {
  WorkQueue q(clock);
  q.add("a");
  q.add("b");
  ASSERT_EQ(q.get(), "a");
  std::atomic<bool> drained{false};
  std::thread drainer([&] {
    q.shut_down_with_drain();
    drained = true;
  });
  while (!q.shutting_down()) std::this_thread::yield();
  q.add("c");                // refused while draining
  EXPECT_EQ(q.get(), "b");   // queued items are still handed out
  EXPECT_FALSE(q.get().has_value());
  std::this_thread::sleep_for(milliseconds(10));
  EXPECT_FALSE(drained.load());  // "a" and "b" are not done yet
  q.done("a");
  q.done("b");
  drainer.join();
  EXPECT_TRUE(drained.load());
}

}  // namespace
}  // namespace kube
