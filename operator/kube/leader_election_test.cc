#include "kube/leader_election.h"

#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "kube/api_error.h"
#include "kube/fake_clock.h"
#include "kube/memory_client.h"

namespace kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class LeaderElectionTest : public ::testing::Test {
 protected:
  LeaderElectionConfig config(const std::string& id) {
    LeaderElectionConfig c;
    c.lease_namespace = "kube-system";
    c.lease_name = "korovod-operator";
    c.identity = id;
    c.on_started_leading = [this] { ++started; };
    c.on_stopped_leading = [this] { ++stopped; };
    return c;
  }
  Object lease() { return client.get(resources::kLeases, "kube-system", "korovod-operator"); }
  // Advances fake time by retry periods until pred() or too many steps.
  // Each step waits for the elector to park on the clock again, so time moves in lockstep.
  template <typename P>
  bool drive_until(P pred) {
    clock.wait_for_waiters(1);
    for (int i = 0; i < 50 && !pred(); ++i) {
      const uint64_t parked = clock.waits_started();
      clock.advance(seconds(2));
      clock.wait_for_waits_started(parked + 1, milliseconds(1000));
    }
    return pred();
  }
  FakeClock clock;
  MemoryClient client{clock};
  std::atomic<int> started{0}, stopped{0};
};

TEST_F(LeaderElectionTest, AcquiresAbsentLeaseByCreatingIt) {
  LeaderElector a(client, config("a"), clock);
  EXPECT_TRUE(a.try_acquire_or_renew());
  const Object spec = lease()["spec"];
  EXPECT_EQ(spec["holderIdentity"], "a");
  EXPECT_EQ(spec["leaseDurationSeconds"], 15);
  EXPECT_EQ(spec["leaseTransitions"], 0);
  EXPECT_EQ(spec["acquireTime"], "2026-01-01T00:00:00.000000Z");
  EXPECT_EQ(spec["renewTime"], "2026-01-01T00:00:00.000000Z");
  EXPECT_EQ(a.observed_leader(), "a");
}

TEST_F(LeaderElectionTest, RenewKeepsAcquireTimeAndMovesRenewTime) {
  LeaderElector a(client, config("a"), clock);
  ASSERT_TRUE(a.try_acquire_or_renew());
  clock.advance(milliseconds(2500));
  ASSERT_TRUE(a.try_acquire_or_renew());
  const Object spec = lease()["spec"];
  EXPECT_EQ(spec["acquireTime"], "2026-01-01T00:00:00.000000Z");
  EXPECT_EQ(spec["renewTime"], "2026-01-01T00:00:02.500000Z");
  EXPECT_EQ(spec["leaseTransitions"], 0);
}

TEST_F(LeaderElectionTest, TakesOverOnlyAfterLeaseExpires) {
  LeaderElector a(client, config("a"), clock);
  LeaderElector b(client, config("b"), clock);
  ASSERT_TRUE(a.try_acquire_or_renew());
  EXPECT_FALSE(b.try_acquire_or_renew());  // b first sees the lease now
  EXPECT_EQ(b.observed_leader(), "a");
  clock.advance(seconds(14));
  EXPECT_FALSE(b.try_acquire_or_renew());
  clock.advance(seconds(1));
  EXPECT_TRUE(b.try_acquire_or_renew());
  const Object spec = lease()["spec"];
  EXPECT_EQ(spec["holderIdentity"], "b");
  EXPECT_EQ(spec["leaseTransitions"], 1);
  EXPECT_EQ(spec["acquireTime"], "2026-01-01T00:00:15.000000Z");
}

TEST_F(LeaderElectionTest, RenewalsByHolderKeepOthersOut) {
  LeaderElector a(client, config("a"), clock);
  LeaderElector b(client, config("b"), clock);
  ASSERT_TRUE(a.try_acquire_or_renew());
  for (int i = 0; i < 10; ++i) {
    EXPECT_FALSE(b.try_acquire_or_renew());
    clock.advance(seconds(10));
    ASSERT_TRUE(a.try_acquire_or_renew());
  }
}

TEST_F(LeaderElectionTest, RunLeadsUntilStopThenReleases) {
  LeaderElector a(client, config("a"), clock);
  std::thread t([&] { a.run(); });
  ASSERT_TRUE(drive_until([&] { return a.is_leader(); }));
  EXPECT_EQ(started.load(), 1);
  a.stop();
  t.join();
  EXPECT_EQ(stopped.load(), 1);
  EXPECT_FALSE(a.is_leader());
  const Object spec = lease()["spec"];
  EXPECT_EQ(spec["holderIdentity"], "");
  EXPECT_EQ(spec["leaseDurationSeconds"], 1);
  LeaderElector b(client, config("b"), clock);
  EXPECT_TRUE(b.try_acquire_or_renew());  // a released lease is free at once
}

TEST_F(LeaderElectionTest, GivesUpWhenRenewFailsPastDeadline) {
  LeaderElector a(client, config("a"), clock);
  std::thread t([&] { a.run(); });
  ASSERT_TRUE(drive_until([&] { return a.is_leader(); }));
  std::atomic<bool> api_down{true};
  client.set_failure_hook([&](const Request& r) -> std::optional<ApiError> {
    if (api_down && r.resource == resources::kLeases)
      return ApiError(503, "ServiceUnavailable", "apiserver down");
    return std::nullopt;
  });
  const auto down_since = clock.steady_now();
  EXPECT_TRUE(drive_until([&] { return stopped.load() == 1; }));
  t.join();  // run() returns once leadership is lost
  EXPECT_FALSE(a.is_leader());
  // Lost after the 10s renew deadline (renewals start one retry period after the last one).
  EXPECT_GE(clock.steady_now() - down_since, seconds(10));
  EXPECT_LE(clock.steady_now() - down_since, seconds(14));
  api_down = false;
  EXPECT_EQ(lease()["spec"]["holderIdentity"], "a");  // not stopped, so not released
}

TEST_F(LeaderElectionTest, StopWhileWaitingToAcquireReturnsWithoutLeading) {
  LeaderElector a(client, config("a"), clock);
  ASSERT_TRUE(a.try_acquire_or_renew());
  LeaderElector b(client, config("b"), clock);
  std::thread t([&] { b.run(); });
  ASSERT_TRUE(clock.wait_for_waiters(1));
  b.stop();
  t.join();
  EXPECT_EQ(started.load(), 0);
  EXPECT_EQ(stopped.load(), 0);
}

TEST_F(LeaderElectionTest, RejectsInconsistentTimings) {
  auto c = config("a");
  c.renew_deadline = seconds(20);
  EXPECT_THROW(LeaderElector(client, c, clock), std::invalid_argument);
  c = config("");
  EXPECT_THROW(LeaderElector(client, c, clock), std::invalid_argument);
}

}  // namespace
}  // namespace kube
