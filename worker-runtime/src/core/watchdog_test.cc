// The watchdog on a fake Env: it fires once a cycle has run for the timeout by the Env's time,
// never before, not for cycles that ended, and not at all when off -- without real waiting.
#include "core/watchdog.h"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <memory>
#include <thread>

#include "core/testing/fake_env.h"

namespace korovod {
namespace {

using namespace std::chrono_literals;
using testing::FakeEnv;

// Real time for the watchdog thread to look again (it polls the fake time every FakeEnv::kPoll).
void let_it_look() { std::this_thread::sleep_for(30ms); }

bool eventually(const std::function<bool()>& pred) {
  for (int i = 0; i < 400; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return pred();
}

TEST(Watchdog, FiresOnceACycleRanForTheTimeoutAndNotBefore) {
  FakeEnv env;
  std::atomic<int> fired{0};
  Watchdog w(env, 60.0, [&] { ++fired; });
  EXPECT_EQ(w.period(), 100ms);
  w.enter_cycle();
  env.await_waiter();  // the thread runs
  env.advance(59s);
  let_it_look();
  EXPECT_EQ(fired.load(), 0) << "fired 1 s before the timeout";
  EXPECT_FALSE(w.fired());
  env.advance(999ms);
  let_it_look();
  EXPECT_EQ(fired.load(), 0) << "fired 1 ms before the timeout";
  env.advance(1ms);
  ASSERT_TRUE(eventually([&] { return fired.load() == 1; })) << "did not fire at the timeout";
  EXPECT_TRUE(w.fired());
  env.advance(600s);
  let_it_look();
  EXPECT_EQ(fired.load(), 1) << "fires once";
}

TEST(Watchdog, CyclesThatEndInTimeNeverFireHoweverLongTheJob) {
  FakeEnv env;
  std::atomic<int> fired{0};
  Watchdog w(env, 2.0, [&] { ++fired; });
  EXPECT_EQ(w.period(), 100ms);  // a tenth of 2 s would be 0.2 s: at most 0.1 s
  for (int cycle = 0; cycle < 20; ++cycle) {
    w.enter_cycle();
    env.advance(1900ms);
    w.leave_cycle();
    env.advance(10s);  // idle between cycles is not a stuck cycle
  }
  let_it_look();
  EXPECT_EQ(fired.load(), 0) << "20 cycles of 1.9 s each (2 s timeout) and 10 s idle between";
  // The cycle in progress is timed from its own start, not the first one's.
  w.enter_cycle();
  env.advance(1999ms);
  let_it_look();
  EXPECT_EQ(fired.load(), 0);
  env.advance(1ms);
  EXPECT_TRUE(eventually([&] { return fired.load() == 1; }));
}

TEST(Watchdog, ShortTimeoutsAreLookedAtEveryTenth) {
  FakeEnv env;
  Watchdog w(env, 0.5, [] {});
  EXPECT_EQ(w.period(), 50ms);
}

TEST(Watchdog, OffStartsNoThreadAndNeverFires) {
  FakeEnv env;
  std::atomic<int> fired{0};
  Watchdog w(env, 0.0, [&] { ++fired; });
  w.enter_cycle();
  env.advance(24h);
  let_it_look();
  EXPECT_EQ(fired.load(), 0);
  w.stop();  // nothing to join
}

TEST(Watchdog, StopEndsTheThreadWithoutFiring) {
  FakeEnv env;
  std::atomic<int> fired{0};
  auto w = std::make_unique<Watchdog>(env, 1.0, [&] { ++fired; });
  w->enter_cycle();
  env.advance(500ms);
  w->stop();  // returns although the fake time never reaches the timeout
  env.advance(10s);
  w.reset();
  EXPECT_EQ(fired.load(), 0);
}

}  // namespace
}  // namespace korovod
