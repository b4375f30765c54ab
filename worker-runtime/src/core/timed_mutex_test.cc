// TimedMutex (core/timed_mutex.h), the runtime's cycle lock: a timed wait gives up at its deadline
// while another thread holds the lock, and gets it once that thread lets go. Also in the TSan set
// (scripts/sanitize tsan), where the lock must order what it guards.
#include "core/timed_mutex.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>
#include <vector>

namespace korovod {
namespace {

using Steady = std::chrono::steady_clock;
using std::chrono::milliseconds;

TEST(TimedMutex, TryLockFailsWhileHeldAndSucceedsAfterUnlock) {
  TimedMutex mu;
  mu.lock();
  EXPECT_FALSE(std::async(std::launch::async, [&] { return mu.try_lock(); }).get());
  mu.unlock();
  EXPECT_TRUE(mu.try_lock());
  EXPECT_FALSE(mu.try_lock());  // not recursive
  mu.unlock();
}

TEST(TimedMutex, TimedLockGivesUpAtItsDeadlineWhileHeld) {
  TimedMutex mu;
  std::lock_guard held(mu);
  const auto start = Steady::now();
  const bool got = std::async(std::launch::async, [&] { return mu.try_lock_until(start + milliseconds(100)); }).get();
  EXPECT_FALSE(got);
  EXPECT_GE(Steady::now() - start, milliseconds(100));
}

TEST(TimedMutex, TimedLockGetsTheLockWhenTheHolderLetsGo) {
  TimedMutex mu;
  mu.lock();
  int guarded = 0;  // written under the lock by both threads, without atomics
  std::atomic<bool> waiting{false};
  auto waiter = std::async(std::launch::async, [&] {
    waiting = true;
    if (!mu.try_lock_until(Steady::now() + std::chrono::seconds(30))) return -1;
    const int seen = guarded;
    guarded = 2;
    mu.unlock();
    return seen;
  });
  while (!waiting) std::this_thread::yield();
  std::this_thread::sleep_for(milliseconds(20));
  guarded = 1;
  mu.unlock();  // wakes the waiter long before its deadline
  EXPECT_EQ(waiter.get(), 1);
  std::lock_guard again(mu);
  EXPECT_EQ(guarded, 2);
}

TEST(TimedMutex, ManyThreadsTakeTurns) {
  TimedMutex mu;
  int count = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i) {
        if (t % 2) {
          std::lock_guard lock(mu);
          ++count;
        } else {
          while (!mu.try_lock_until(Steady::now() + milliseconds(1))) {
          }
          ++count;
          mu.unlock();
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(count, 4000);
}

}  // namespace
}  // namespace korovod
