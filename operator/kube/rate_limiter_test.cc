#include "kube/rate_limiter.h"

#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "kube/fake_clock.h"

namespace kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

TEST(TokenBucket, AcceptsBurstThenRefusesUntilRefilled) {
  FakeClock clock;
  TokenBucket bucket(2.0, 3, clock);
  EXPECT_TRUE(bucket.try_accept());
  EXPECT_TRUE(bucket.try_accept());
  EXPECT_TRUE(bucket.try_accept());
  EXPECT_FALSE(bucket.try_accept());
  clock.advance(milliseconds(499));
  EXPECT_FALSE(bucket.try_accept());
  clock.advance(milliseconds(1));
  EXPECT_TRUE(bucket.try_accept());
  EXPECT_FALSE(bucket.try_accept());
}

TEST(TokenBucket, RefillIsCappedAtBurst) {
  FakeClock clock;
  TokenBucket bucket(10.0, 2, clock);
  clock.advance(seconds(100));
  EXPECT_TRUE(bucket.try_accept());
  EXPECT_TRUE(bucket.try_accept());
  EXPECT_FALSE(bucket.try_accept());
}

TEST(TokenBucket, ReserveBorrowsAheadSoWaitersQueueInOrder) {
  FakeClock clock;
  TokenBucket bucket(10.0, 1, clock);
  EXPECT_EQ(bucket.reserve(), nanoseconds(0));
  EXPECT_EQ(bucket.reserve(), milliseconds(100));
  EXPECT_EQ(bucket.reserve(), milliseconds(200));
}

TEST(TokenBucket, NonPositiveQpsIsUnlimited) {
  FakeClock clock;
  TokenBucket bucket(0, 1, clock);
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(bucket.try_accept());
  EXPECT_EQ(bucket.reserve(), nanoseconds(0));
}

TEST(TokenBucket, WaitBlocksUntilClockAdvances) {
  FakeClock clock;
  TokenBucket bucket(1.0, 1, clock);
  bucket.wait();  // the burst token: immediate
  std::atomic<bool> done{false};
  std::thread t([&] {
    bucket.wait();
    done = true;
  });
  ASSERT_TRUE(clock.wait_for_waiters(1));
  EXPECT_FALSE(done.load());
  clock.advance(milliseconds(500));
  std::this_thread::sleep_for(milliseconds(10));
  EXPECT_FALSE(done.load());
  clock.advance(milliseconds(500));
  t.join();
  EXPECT_TRUE(done.load());
}

TEST(ExponentialBackoff, DoublesPerFailureUpToMax) {
  ExponentialBackoff b(milliseconds(5), seconds(1));
  EXPECT_EQ(b.when("a"), milliseconds(5));
  EXPECT_EQ(b.when("a"), milliseconds(10));
  EXPECT_EQ(b.when("a"), milliseconds(20));
  EXPECT_EQ(b.when("b"), milliseconds(5));  // per item
  EXPECT_EQ(b.num_requeues("a"), 3);
  for (int i = 0; i < 200; ++i) b.when("a");  // no overflow at large exponents
  EXPECT_EQ(b.when("a"), seconds(1));
}

TEST(ExponentialBackoff, ForgetResetsTheItem) {
  ExponentialBackoff b(milliseconds(5), seconds(1));
  b.when("a");
  b.when("a");
  b.forget("a");
  EXPECT_EQ(b.num_requeues("a"), 0);
  EXPECT_EQ(b.when("a"), milliseconds(5));
}

TEST(MaxOf, ReturnsTheLongestDelayOfItsParts) {
  FakeClock clock;
  std::vector<std::unique_ptr<ItemRateLimiter>> parts;
  parts.push_back(std::make_unique<ExponentialBackoff>(milliseconds(5), seconds(1000)));
  parts.push_back(std::make_unique<BucketRateLimiter>(1.0, 1, clock));
  MaxOf limiter(std::move(parts));
  EXPECT_EQ(limiter.when("a"), milliseconds(5));  // bucket has its burst token
  EXPECT_EQ(limiter.when("b"), seconds(1));       // bucket now borrows: 1s > 5ms
  EXPECT_EQ(limiter.num_requeues("a"), 1);
  limiter.forget("a");
  EXPECT_EQ(limiter.num_requeues("a"), 0);
}

TEST(DefaultControllerRateLimiter, StartsAt5msAndAllowsBurstOf100) {
  FakeClock clock;
  auto limiter = default_controller_rate_limiter(clock);
  for (int i = 0; i < 100; ++i)
    ASSERT_EQ(limiter->when("item" + std::to_string(i)), milliseconds(5));
  EXPECT_EQ(limiter->when("item100"), milliseconds(100));  // bucket exhausted: 1/10 qps
}

}  // namespace
}  // namespace kube
