// StoreChooser, the measured choice between plain and streaming slot stores (pure: the test plays
// the clock by reporting made-up timings).
#include <gtest/gtest.h>

#include "transport/shm/store_chooser.h"

namespace korovod::shm {
namespace {

constexpr int64_t kMiB = 1 << 20;

// Runs `calls` calls of `bytes` where plain stores take `cached_s` and streaming `streaming_s`;
// returns how many used streaming stores.
int run(StoreChooser& c, int calls, int64_t bytes, double cached_s, double streaming_s) {
  int streamed = 0;
  for (int i = 0; i < calls; ++i) {
    const bool s = c.streaming(bytes);
    streamed += s;
    c.report(s, s ? streaming_s : cached_s, bytes);
  }
  return streamed;
}

TEST(StoreChooser, ForcedModesIgnoreMeasurements) {
  StoreChooser cached(SlotStores::kCached), streaming(SlotStores::kStreaming);
  EXPECT_EQ(run(cached, 40, kMiB, 9.0, 1.0), 0);
  EXPECT_EQ(run(streaming, 40, kMiB, 1.0, 9.0), 40);
}

TEST(StoreChooser, MeasuresBothThenKeepsTheFasterAndRetriesTheOther) {
  StoreChooser c(SlotStores::kAuto, 16);
  // The first calls alternate, plain first. The very first one pays for cold pages (10x here);
  // plain stores' second call shows their real cost.
  const double first_touch = 3e-3;
  for (int call = 0; call < StoreChooser::kFirstCalls; ++call) {
    const bool s = c.streaming(kMiB);
    EXPECT_EQ(s, call % 2 == 1) << call;
    c.report(s, s ? 2e-4 : (call == 0 ? first_touch : 1e-4), kMiB);
  }
  EXPECT_FALSE(c.favoured(kMiB));  // the cold first call did not decide
  // 64 more calls: plain, except the one call in 16 that re-measures streaming stores.
  EXPECT_EQ(run(c, 64, kMiB, 1e-4, 2e-4), 4);
  EXPECT_DOUBLE_EQ(c.cost(false, kMiB), 1e-4 / kMiB);
  EXPECT_DOUBLE_EQ(c.cost(true, kMiB), 2e-4 / kMiB);
}

TEST(StoreChooser, FollowsTheMachineWhenTheFasterWayChanges) {
  StoreChooser c(SlotStores::kAuto, 16);
  run(c, 32, kMiB, 1e-4, 3e-4);               // plain stores faster
  EXPECT_LE(run(c, 16, kMiB, 1e-4, 3e-4), 1);  // ... so at most the exploring call streams
  // One slow call (another process took the core) does not move it: a way costs the least of
  // its last few calls.
  c.report(false, 5e-3, kMiB);
  EXPECT_FALSE(c.favoured(kMiB));
  // The machine changes: plain stores now 9x slower. The favoured way's own calls give it away
  // once its fast calls have aged out of the window, without waiting for an exploring call.
  int first_streaming = -1;
  for (int i = 0; i < 8 && first_streaming < 0; ++i) {
    const bool s = c.streaming(kMiB);
    if (s) first_streaming = i;
    c.report(s, s ? 3e-4 : 9e-4, kMiB);
  }
  ASSERT_GE(first_streaming, 0);
  EXPECT_LE(first_streaming, StoreChooser::kWindow);
  // And back: streaming slower again. Only an exploring call re-measures plain stores, so the
  // switch back comes within one exploration period.
  const int streamed = run(c, 32, kMiB, 1e-4, 5e-4);
  EXPECT_LE(streamed, 17);
  EXPECT_FALSE(c.streaming(kMiB) && c.cost(false, kMiB) < c.cost(true, kMiB));
}

TEST(StoreChooser, AChangeDuringTheFirstCallsDoesNotLeaveTheSlowerWayInFavour) {
  // Rank 0's timings of a 256 MiB class in a benchmark sweep (ms): plain stores' first call ran
  // before the machine changed, every later one after, when they took 3-4x streaming's time.
  StoreChooser c(SlotStores::kAuto, 16);
  const double ms[StoreChooser::kFirstCalls] = {38.1, 55.5, 143.6, 43.6, 170.9, 48.3};
  for (int call = 0; call < StoreChooser::kFirstCalls; ++call) {
    const bool s = c.streaming(256 * kMiB);
    c.report(s, ms[call] * 1e-3, 256 * kMiB);
  }
  EXPECT_TRUE(c.favoured(256 * kMiB));
  EXPECT_TRUE(c.streaming(256 * kMiB));
}

TEST(StoreChooser, EachSizeClassDecidesOnItsOwn) {
  StoreChooser c(SlotStores::kAuto, 16);
  run(c, 20, kMiB, 1e-4, 5e-4);            // 1 MiB: plain stores faster
  run(c, 20, 64 * kMiB, 9e-2, 1e-2);       // 64 MiB: streaming faster
  EXPECT_FALSE(c.streaming(kMiB + 12345));  // same class as 1 MiB
  EXPECT_TRUE(c.streaming(100 * kMiB));     // same class as 64 MiB
  EXPECT_EQ(c.cost(true, 4 * kMiB), 0.0);   // a class never used has no cost yet
}

TEST(StoreChooser, AFollowerWritesAsRankZeroFavoursOnTheSameSchedule) {
  StoreChooser leader(SlotStores::kAuto, 16), follower(SlotStores::kAuto, 16);
  for (int call = 0; call < 40; ++call) {
    const bool favoured = leader.favoured(kMiB);  // what rank 0 published after the last call
    const bool lead = leader.streaming(kMiB);
    EXPECT_EQ(follower.streaming(kMiB, favoured), lead) << "call " << call;
    leader.report(lead, lead ? 1e-4 : 2e-4, kMiB);
  }
  EXPECT_TRUE(leader.favoured(kMiB));
  EXPECT_EQ(StoreChooser::size_class(kMiB), 20);
  EXPECT_EQ(StoreChooser::size_class(2 * kMiB - 1), 20);
}

}  // namespace
}  // namespace korovod::shm
