#include "launch/hosts.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace korovod::launcher {
namespace {

std::string describe(const std::vector<SlotAssignment>& slots) {
  std::string s;
  for (const SlotAssignment& a : slots) {
    s += fmt::format("{}:r{}/{} l{}/{} c{}/{} ", a.hostname, a.rank, a.size, a.local_rank, a.local_size, a.cross_rank,
                     a.cross_size);
  }
  return s;
}

TEST(Hosts, ParsesHostSlotList) {
  auto hosts = parse_hosts("worker-0:2, worker-1:4,10.0.0.3:1");
  ASSERT_TRUE(hosts.is_ok()) << hosts.status().to_string();
  ASSERT_EQ(hosts->size(), 3u);
  EXPECT_EQ((*hosts)[0].name, "worker-0");
  EXPECT_EQ((*hosts)[0].slots, 2);
  EXPECT_EQ((*hosts)[1].name, "worker-1");
  EXPECT_EQ((*hosts)[1].slots, 4);
  EXPECT_EQ((*hosts)[2].name, "10.0.0.3");
  EXPECT_EQ(hosts_to_string(*hosts), "worker-0:2,worker-1:4,10.0.0.3:1");
}

TEST(Hosts, RejectsEntriesHorovodrunRejects) {
  for (const char* bad : {"worker-0", "worker-0:", "worker-0:0", "worker-0:-1", "worker-0:two", ":2", "a b:2", ""}) {
    auto hosts = parse_hosts(bad);
    EXPECT_FALSE(hosts.is_ok()) << bad;
  }
  auto twice = parse_hosts("a:1,b:1,a:2");
  ASSERT_FALSE(twice.is_ok());
  EXPECT_NE(twice.status().message().find("\"a\" is listed twice"), std::string::npos) << twice.status().message();
  auto bad_slots = parse_hosts("a:1,b:x");
  ASSERT_FALSE(bad_slots.is_ok());
  EXPECT_NE(bad_slots.status().message().find("\"b:x\""), std::string::npos) << bad_slots.status().message();
}

TEST(Hosts, ParsesHostfileFormats) {
  const std::string text =
      "# the cluster\n"
      "node-a slots=4\n"
      "\n"
      "node-b slots=2 max_slots=8   # trailing comment\n"
      "  node-c:3\n";
  auto hosts = parse_hostfile(text, "hosts.txt");
  ASSERT_TRUE(hosts.is_ok()) << hosts.status().to_string();
  EXPECT_EQ(hosts_to_string(*hosts), "node-a:4,node-b:2,node-c:3");
}

TEST(Hosts, HostfileErrorsNameFileAndLine) {
  auto missing_slots = parse_hostfile("a slots=1\nnode-b\n", "hf");
  ASSERT_FALSE(missing_slots.is_ok());
  EXPECT_NE(missing_slots.status().message().find("hf line 2"), std::string::npos) << missing_slots.status().message();
  auto bad_number = parse_hostfile("# x\n\nnode slots=zero\n", "hf");
  ASSERT_FALSE(bad_number.is_ok());
  EXPECT_NE(bad_number.status().message().find("hf line 3"), std::string::npos) << bad_number.status().message();
  EXPECT_FALSE(parse_hostfile("# only comments\n", "hf").is_ok());
}

TEST(Hosts, AssignsRanksHostByHostLikeHorovodrun) {
  auto slots = assign_slots({{"a", 2}, {"b", 2}}, 4);
  ASSERT_TRUE(slots.is_ok());
  EXPECT_EQ(describe(*slots), "a:r0/4 l0/2 c0/2 a:r1/4 l1/2 c0/2 b:r2/4 l0/2 c1/2 b:r3/4 l1/2 c1/2 ");
}

TEST(Hosts, UnevenHostsGiveCrossSizePerLocalRank) {
  // get_host_assignments: cross ranks count the hosts that have a rank with this local rank.
  auto slots = assign_slots({{"a", 3}, {"b", 1}, {"c", 2}}, 6);
  ASSERT_TRUE(slots.is_ok());
  EXPECT_EQ(describe(*slots),
            "a:r0/6 l0/3 c0/3 a:r1/6 l1/3 c0/2 a:r2/6 l2/3 c0/1 b:r3/6 l0/1 c1/3 c:r4/6 l0/2 c2/3 c:r5/6 l1/2 c1/2 ");
}

TEST(Hosts, FewerRanksThanSlotsLeaveLaterHostsOut) {
  auto slots = assign_slots({{"a", 2}, {"b", 2}}, 3);
  ASSERT_TRUE(slots.is_ok());
  EXPECT_EQ(describe(*slots), "a:r0/3 l0/2 c0/2 a:r1/3 l1/2 c0/1 b:r2/3 l0/1 c1/2 ");
  auto one_host = assign_slots({{"a", 2}, {"b", 2}}, 2);
  ASSERT_TRUE(one_host.is_ok());
  EXPECT_EQ(describe(*one_host), "a:r0/2 l0/2 c0/1 a:r1/2 l1/2 c0/1 ");
}

TEST(Hosts, MoreRanksThanSlotsNamesBothNumbers) {
  auto slots = assign_slots({{"a", 2}, {"b", 1}}, 5);
  ASSERT_FALSE(slots.is_ok());
  EXPECT_EQ(slots.status().message(), "-np 5 is more than the 3 slots of the hosts (a:2,b:1)");
}

// Regression (korovodrun_hosts fuzz target, tests/fuzz/corpus/korovodrun_hosts): the slot total
// was an int, so two hosts of 2^31-1 slots overflowed (UB) and every -np was refused.
TEST(Hosts, SlotTotalPastIntMaxDoesNotOverflow) {
  auto hosts = parse_hosts("a:2147483647,b:2147483647");
  ASSERT_TRUE(hosts.is_ok()) << hosts.status().to_string();
  auto slots = assign_slots(*hosts, 3);
  ASSERT_TRUE(slots.is_ok()) << slots.status().to_string();
  EXPECT_EQ(describe(*slots), "a:r0/3 l0/3 c0/1 a:r1/3 l1/3 c0/1 a:r2/3 l2/3 c0/1 ");
}

}  // namespace
}  // namespace korovod::launcher
