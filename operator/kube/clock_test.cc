#include "kube/clock.h"

#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "kube/fake_clock.h"

namespace kube {
namespace {

using namespace std::chrono;

TEST(Time, FormatsUtcWithSecondPrecision) {
  const auto t = sys_days(year(2026) / 1 / 2) + hours(3) + minutes(4) + seconds(5) +
                 milliseconds(678);
  EXPECT_EQ(format_time(system_clock::time_point(t)), "2026-01-02T03:04:05Z");
}

TEST(Time, FormatsMicroTime) {
  const auto t = system_clock::time_point(sys_days(year(2026) / 1 / 2) + hours(3) + minutes(4) +
                                          seconds(5) + microseconds(42));
  EXPECT_EQ(format_micro_time(t), "2026-01-02T03:04:05.000042Z");
  EXPECT_EQ(parse_time(format_micro_time(t)), t);
}

TEST(Time, ParsesZuluOffsetsAndFractions) {
  const auto base = system_clock::time_point(sys_days(year(2026) / 1 / 2) + hours(3) +
                                             minutes(4) + seconds(5));
  EXPECT_EQ(parse_time("2026-01-02T03:04:05Z"), base);
  EXPECT_EQ(parse_time("2026-01-02T05:04:05+02:00"), base);
  EXPECT_EQ(parse_time("2026-01-02T02:34:05-00:30"), base);
  EXPECT_EQ(parse_time("2026-01-02T03:04:05.123456Z"), base + microseconds(123456));
}

TEST(Time, RoundTripsFormat) {
  FakeClock clock;
  EXPECT_EQ(format_time(parse_time(format_time(clock.now()))), "2026-01-01T00:00:00Z");
}

TEST(Time, RejectsMalformedInput) {
  EXPECT_THROW(parse_time(""), std::invalid_argument);
  EXPECT_THROW(parse_time("2026-01-02"), std::invalid_argument);
  EXPECT_THROW(parse_time("2026-01-02T03:04:05"), std::invalid_argument);  // no zone
  EXPECT_THROW(parse_time("2026-13-02T03:04:05Z"), std::invalid_argument);
  EXPECT_THROW(parse_time("2026-01-02T03:04:05Zjunk"), std::invalid_argument);
  EXPECT_THROW(parse_time("2026-01-02T03:04:05.Z"), std::invalid_argument);
}

TEST(FakeClock, AdvanceMovesWallAndSteadyTime) {
  FakeClock clock;
  const auto w = clock.now();
  const auto s = clock.steady_now();
  clock.advance(seconds(3));
  EXPECT_EQ(clock.now() - w, seconds(3));
  EXPECT_EQ(clock.steady_now() - s, seconds(3));
}

TEST(FakeClock, WaitUntilReturnsFalseAtDeadlineAfterAdvance) {
  FakeClock clock;
  std::mutex mu;
  std::condition_variable cv;
  std::atomic<int> result{-1};
  std::thread t([&] {
    std::unique_lock lock(mu);
    result = clock.wait_until(lock, cv, clock.steady_now() + seconds(10), [] { return false; });
  });
  ASSERT_TRUE(clock.wait_for_waiters(1));
  clock.advance(seconds(9));
  std::this_thread::sleep_for(milliseconds(10));
  EXPECT_EQ(result.load(), -1);
  clock.advance(seconds(1));
  t.join();
  EXPECT_EQ(result.load(), 0);
  EXPECT_EQ(clock.waiters(), 0u);
}

TEST(FakeClock, WaitUntilReturnsTrueWhenPredicateTurnsTrue) {
  FakeClock clock;
  std::mutex mu;
  std::condition_variable cv;
  bool ready = false;
  std::thread t([&] {
    std::this_thread::sleep_for(milliseconds(5));
    std::lock_guard lock(mu);
    ready = true;
    cv.notify_all();
  });
  std::unique_lock lock(mu);
  EXPECT_TRUE(clock.wait_until(lock, cv, clock.steady_now() + hours(1), [&] { return ready; }));
  lock.unlock();
  t.join();
}

}  // namespace
}  // namespace kube
