// Checks that an operation gives up at its time bound on a FakeEnv's clock, not before and not
// on the system's clock: the operation runs on a thread; the test lets it take its deadline, moves
// the fake time to just before the bound, gives it more than one poll slice of real time (it must
// still be waiting), then moves past the bound (it must end within seconds of real time).
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "core/testing/fake_env.h"
#include "korovod/status.h"

namespace korovod::testing {

// Runs `op` against `env` (whose time only the test moves) and returns what it returned;
// `bound` is the operation's time bound. Failures say what happened in which time.
inline Status ends_at_bound(FakeEnv& env, std::chrono::milliseconds bound, const std::function<Status()>& op) {
  using std::chrono::milliseconds;
  const auto real_start = std::chrono::steady_clock::now();
  const auto fake_start = env.now();
  std::atomic<bool> done{false};
  Status result;
  Clock::TimePoint fake_end{};
  std::thread runner([&] {
    result = op();
    fake_end = env.now();
    done = true;
  });
  // The operations checked take their deadline first (microseconds); this is ample on a loaded
  // machine, and taking it later would show as "still waiting" below, not as a pass.
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_FALSE(done.load()) << "ended before any Env time passed: " << result.to_string();
  env.advance(bound - milliseconds(100));
  std::this_thread::sleep_for(milliseconds(1200));  // more than one poll slice (at most 1 s)
  EXPECT_FALSE(done.load()) << "gave up " << (bound - milliseconds(100)).count()
                            << " ms into a bound of " << bound.count()
                            << " ms of the Env's time: " << result.to_string();
  env.advance(milliseconds(200));
  for (int i = 0; i < 5000 && !done.load(); ++i) std::this_thread::sleep_for(milliseconds(1));
  EXPECT_TRUE(done.load()) << "still waiting " << (bound + milliseconds(100)).count()
                           << " ms into a bound of " << bound.count() << " ms of the Env's time";
  if (!done.load()) {
    // Let it end on its own clock rather than leave a thread behind: well past any bound.
    env.advance(std::chrono::hours(24));
  }
  runner.join();
  EXPECT_GE(fake_end - fake_start, bound);
  EXPECT_LT(std::chrono::steady_clock::now() - real_start, std::chrono::seconds(10)) << "real time, not the Env's";
  return result;
}

}  // namespace korovod::testing
