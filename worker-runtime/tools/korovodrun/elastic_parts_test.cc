// The pure parts of korovodrun's elastic mode: discovery output, host order and changes, round
// assignment, the blacklist and its cooldown. The discovery script run as a process:
// tests/korovodrun/discovery_script_test.cc.
#include <gtest/gtest.h>

#include "launch/discovery.h"
#include "launch/elastic_round.h"
#include "launch/host_blacklist.h"

namespace korovod::launcher {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::string hosts_text(const std::vector<HostSlots>& hosts) { return hosts_to_string(hosts); }

TEST(Discovery, ParsesHostSlotsAndBareHosts) {
  Result<std::vector<HostSlots>> h = parse_discovery_output("worker-0:2\n\nworker-1\n  worker-2:4  \r\n", 3);
  ASSERT_TRUE(h.is_ok()) << h.status().message();
  EXPECT_EQ(hosts_text(*h), "worker-0:2,worker-1:3,worker-2:4");
}

TEST(Discovery, EmptyOutputIsNoHosts) {
  Result<std::vector<HostSlots>> h = parse_discovery_output("\n\n", 1);
  ASSERT_TRUE(h.is_ok());
  EXPECT_TRUE(h->empty());
}

TEST(Discovery, HostTwiceKeepsFirstPlaceLastSlots) {
  Result<std::vector<HostSlots>> h = parse_discovery_output("a:1\nb:1\na:3\n", 1);
  ASSERT_TRUE(h.is_ok());
  EXPECT_EQ(hosts_text(*h), "a:3,b:1");
}

TEST(Discovery, BadLineIsNamed) {
  Result<std::vector<HostSlots>> h = parse_discovery_output("a:1\nb:x\n", 1);
  ASSERT_FALSE(h.is_ok());
  EXPECT_NE(h.status().message().find("line 2 \"b:x\""), std::string::npos) << h.status().message();
  EXPECT_FALSE(parse_discovery_output("a b:1\n", 1).is_ok());
  EXPECT_FALSE(parse_discovery_output("a:0\n", 1).is_ok());
}

TEST(Discovery, ChangesAreAdditionsAndRemovals) {
  const std::vector<HostSlots> ab{{"a", 2}, {"b", 1}};
  EXPECT_EQ(compare_hosts(ab, ab), kHostsUnchanged);
  EXPECT_EQ(compare_hosts(ab, {{"a", 2}, {"b", 1}, {"c", 1}}), kHostsAdded);
  EXPECT_EQ(compare_hosts(ab, {{"a", 3}, {"b", 1}}), kHostsAdded);
  EXPECT_EQ(compare_hosts(ab, {{"a", 2}}), kHostsRemoved);
  EXPECT_EQ(compare_hosts(ab, {{"a", 1}, {"b", 1}}), kHostsRemoved);
  EXPECT_EQ(compare_hosts(ab, {{"a", 2}, {"c", 1}}), kHostsAdded | kHostsRemoved);
}

TEST(Discovery, OldHostsKeepTheirOrder) {
  EXPECT_EQ(hosts_text(keep_host_order({{"a", 1}, {"b", 1}, {"c", 1}}, {{"d", 1}, {"c", 2}, {"a", 1}})), "a:1,c:2,d:1");
}

std::string ranks(const std::vector<RoundMember>& members) {
  std::string s;
  for (const RoundMember& m : members) {
    s += (s.empty() ? "" : " ") + m.worker.id() + "=" + assignment_value(m.place) + (m.is_new ? "*" : "");
  }
  return s;
}

TEST(ElasticRound, FirstRoundFillsHostsInOrderUpToMax) {
  RoundInputs in;
  in.hosts = {{"a", 2}, {"b", 2}};
  in.max_np = 3;
  EXPECT_EQ(ranks(plan_round(in)), "a:0=0 3 0 2 0 2* a:1=1 3 1 2 0 1* b:0=2 3 0 1 1 2*");
}

TEST(ElasticRound, SurvivorsKeepOrderAndRankZero) {
  RoundInputs in;
  in.hosts = {{"a", 2}, {"b", 2}};
  // b:1 was rank 0, a:0 rank 1, a:1 (gone) rank 2, b:0 rank 3.
  in.survivors = {{"b", 1}, {"a", 0}, {"b", 0}};
  in.add_new_workers = false;
  EXPECT_EQ(ranks(plan_round(in)), "b:1=0 3 0 2 0 2 a:0=1 3 0 1 1 2 b:0=2 3 1 2 0 1");
}

TEST(ElasticRound, SurvivorsKeepExactRanksWhenTheLastLeaves) {
  RoundInputs in;
  in.hosts = {{"a", 3}};
  in.survivors = {{"a", 0}, {"a", 1}};
  in.add_new_workers = true;
  in.busy = {{"a", 2}};  // its old process still runs: not started again
  EXPECT_EQ(ranks(plan_round(in)), "a:0=0 2 0 2 0 1 a:1=1 2 1 2 0 1");
  in.busy.clear();
  EXPECT_EQ(ranks(plan_round(in)), "a:0=0 3 0 3 0 1 a:1=1 3 1 3 0 1 a:2=2 3 2 3 0 1*");
}

TEST(ElasticRound, RemovedHostsAndSlotsDropSurvivors) {
  RoundInputs in;
  in.hosts = {{"a", 1}};
  in.survivors = {{"b", 0}, {"a", 1}, {"a", 0}};
  in.add_new_workers = false;
  EXPECT_EQ(ranks(plan_round(in)), "a:0=0 1 0 1 0 1");
}

TEST(ElasticRound, NewWorkersOnlyBelowMinWhenNotAdding) {
  RoundInputs in;
  in.hosts = {{"a", 3}};
  in.survivors = {{"a", 1}};
  in.add_new_workers = false;
  in.min_np = 2;
  EXPECT_EQ(ranks(plan_round(in)), "a:1=0 3 0 3 0 1 a:0=1 3 1 3 0 1* a:2=2 3 2 3 0 1*");
  in.min_np = 1;
  EXPECT_EQ(ranks(plan_round(in)), "a:1=0 1 0 1 0 1");
}

TEST(HostBlacklist, CooldownRangeLimitsAsHorovod) {
  EXPECT_TRUE(check_cooldown_range({1, 3600}).is_ok());
  EXPECT_FALSE(check_cooldown_range({0, 10}).is_ok());
  EXPECT_FALSE(check_cooldown_range({1, 3601}).is_ok());
  EXPECT_FALSE(check_cooldown_range({20, 10}).is_ok());
}

TEST(HostBlacklist, FailuresInARowBlacklistForGoodWithoutRange) {
  HostBlacklist b(2, std::nullopt, [] { return 0.0; });
  const Clock::time_point t0{};
  EXPECT_FALSE(b.record_failure({"a", 0}, t0));
  b.record_ready({"a", 0});  // the row ends
  EXPECT_FALSE(b.record_failure({"a", 0}, t0));
  b.record_ready({"a", 1});  // another slot's start ends no row of slot 0
  EXPECT_FALSE(b.record_failure({"a", 1}, t0));
  EXPECT_FALSE(b.is_blacklisted("a", t0));
  EXPECT_TRUE(b.record_failure({"a", 0}, t0));
  EXPECT_TRUE(b.is_blacklisted("a", t0 + 100h));
  EXPECT_FALSE(b.is_blacklisted("b", t0));
  EXPECT_FALSE(b.next_cooldown_end());
  EXPECT_TRUE(b.take_resurrected(t0 + 100h).empty());
}

TEST(HostBlacklist, CooldownDoublesWithJitterAndClamps) {
  double u = 0.5;
  HostBlacklist b(1, CooldownRange{10, 50}, [&u] { return u; });
  const Clock::time_point t0{};
  ASSERT_TRUE(b.record_failure({"a", 0}, t0));  // 10 * 2^1 + 0.5 * 10 = 25 s
  EXPECT_EQ(*b.next_cooldown_end(), t0 + 25s);
  EXPECT_TRUE(b.is_blacklisted("a", t0 + 24s));
  EXPECT_TRUE(b.take_resurrected(t0 + 24s).empty());
  EXPECT_FALSE(b.is_blacklisted("a", t0 + 25s));
  EXPECT_EQ(b.take_resurrected(t0 + 25s), std::vector<std::string>{"a"});
  ASSERT_TRUE(b.record_failure({"a", 0}, t0 + 30s));  // 10 * 4 + 5 = 45 s
  EXPECT_EQ(*b.next_cooldown_end(), t0 + 75s);
  b.take_resurrected(t0 + 75s);
  ASSERT_TRUE(b.record_failure({"a", 0}, t0 + 80s));  // 80 + 5 clamped to 50
  EXPECT_EQ(*b.next_cooldown_end(), t0 + 130s);
}

}  // namespace
}  // namespace korovod::launcher
