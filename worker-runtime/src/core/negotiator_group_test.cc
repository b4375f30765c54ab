// Grouped requests and the response cache: a group is negotiated and released as a whole, also
// when it comes back under the same names with other shapes, dtypes or members (Horovod: a
// cached name with other parameters is INVALID, its entry dropped and renegotiated). N ranks as
// N threads over the fake transport.
#include <gtest/gtest.h>

#include <mutex>
#include <optional>
#include <thread>

#include "core/negotiator.h"
#include "core/testing/test_ranks.h"
#include "transport/fake/fake_ranks.h"
#include "transport/fake/fake_world.h"

namespace korovod {
namespace {

using testing::FakeCluster;
using testing::iota_ranks;
using testing::run_ranks;

struct Member {
  std::string name;
  std::vector<int64_t> shape;
  DataType dtype = DataType::kFloat32;
};

// One grouped submission as the engine queues it: every member carries the group's id and size.
std::vector<Request> group(int32_t id, const std::vector<Member>& members) {
  std::vector<Request> out;
  for (const Member& m : members) {
    Request r;
    r.type = RequestType::kAllreduce;
    r.name = m.name;
    r.shape = m.shape;
    r.dtype = m.dtype;
    r.group_id = members.size() > 1 ? id : -1;
    r.group_size = static_cast<int32_t>(members.size());
    out.push_back(std::move(r));
  }
  return out;
}

struct Cycle {
  std::vector<ResponsePtr> responses;
  bool slow_path = false;
};

// Submits `requests` in one cycle, then runs empty cycles until `expected` responses came back
// (at most 20 cycles: a group left waiting for a member shows up as too few responses, not as a
// hang). Returns each cycle that produced responses.
std::vector<Cycle> run_until(Negotiator& neg, std::vector<Request> requests, size_t expected) {
  std::vector<Cycle> cycles;
  size_t got = 0;
  for (int i = 0; i < 20 && got < expected; ++i) {
    CycleInput in;
    if (i == 0) in.requests = std::move(requests);
    Result<CycleOutput> out = neg.run_cycle(std::move(in));
    EXPECT_TRUE(out.is_ok()) << out.status().to_string();
    if (!out.is_ok()) break;
    if (out->responses.empty()) continue;
    got += out->responses.size();
    cycles.push_back({out->responses, out->used_slow_path});
  }
  return cycles;
}

std::vector<std::string> names_of(const Cycle& c) {
  std::vector<std::string> names;
  for (const ResponsePtr& r : c.responses) names.push_back(r->names[0]);
  return names;
}

// On every rank: the first group, then the second under the same names; expects each to be
// released whole in one cycle, the second with its own shapes and dtypes, and a third
// submission of the second group to come from the cache alone.
void expect_reuse_renegotiates(const std::vector<Member>& first, const std::vector<Member>& second) {
  const int n = 2;
  FakeCluster c(n);
  run_ranks(n, [&](int rank) {
    auto channel = fake::make_fake_control(c.world, iota_ranks(n), rank, "ctl");
    Negotiator neg(*channel, {iota_ranks(n), 16, {}}, c.clock, c.log, nullptr);
    std::vector<Cycle> cycles = run_until(neg, group(0, first), first.size());
    ASSERT_EQ(cycles.size(), 1u) << "rank " << rank;
    EXPECT_EQ(cycles[0].responses.size(), first.size());

    cycles = run_until(neg, group(1, second), second.size());
    ASSERT_EQ(cycles.size(), 1u) << "rank " << rank << ": the group was not released whole";
    ASSERT_EQ(cycles[0].responses.size(), second.size()) << "rank " << rank;
    for (size_t i = 0; i < second.size(); ++i) {
      const Response& r = *cycles[0].responses[i];
      EXPECT_EQ(r.type, ResponseType::kAllreduce) << r.error;
      EXPECT_EQ(r.names[0], second[i].name);
      EXPECT_EQ(r.shapes[0], second[i].shape) << r.names[0];
      EXPECT_EQ(r.dtype, second[i].dtype) << r.names[0];
    }

    cycles = run_until(neg, group(2, second), second.size());
    ASSERT_EQ(cycles.size(), 1u);
    EXPECT_EQ(cycles[0].responses.size(), second.size());
    EXPECT_FALSE(cycles[0].slow_path) << "the renegotiated group is cached again";
  });
}

TEST(NegotiatorGroups, GroupReusedWithOneMemberOfAnotherShapeIsRenegotiatedWhole) {
  expect_reuse_renegotiates({{"g.0", {3}}, {"g.1", {2}}}, {{"g.0", {3}}, {"g.1", {5}}});
}

TEST(NegotiatorGroups, GroupReusedWithOneMemberOfAnotherDtypeIsRenegotiatedWhole) {
  expect_reuse_renegotiates({{"g.0", {3}}, {"g.1", {2}}}, {{"g.0", {3}}, {"g.1", {2}, DataType::kFloat64}});
}

TEST(NegotiatorGroups, GroupReusedWithOneMemberMoreIsRenegotiatedWhole) {
  expect_reuse_renegotiates({{"g.0", {3}}, {"g.1", {2}}}, {{"g.0", {3}}, {"g.1", {2}}, {"g.2", {4}}});
}

TEST(NegotiatorGroups, GroupReusedWithOneMemberFewerIsServedFromTheCache) {
  const int n = 2;
  FakeCluster c(n);
  run_ranks(n, [&](int rank) {
    auto channel = fake::make_fake_control(c.world, iota_ranks(n), rank, "ctl");
    Negotiator neg(*channel, {iota_ranks(n), 16, {}}, c.clock, c.log, nullptr);
    ASSERT_EQ(run_until(neg, group(0, {{"g.0", {3}}, {"g.1", {2}}, {"g.2", {4}}}), 3).size(), 1u);
    std::vector<Cycle> cycles = run_until(neg, group(1, {{"g.0", {3}}, {"g.1", {2}}}), 2);
    ASSERT_EQ(cycles.size(), 1u) << "rank " << rank;
    EXPECT_EQ(names_of(cycles[0]), (std::vector<std::string>{"g.0", "g.1"}));
    EXPECT_FALSE(cycles[0].slow_path);
    // And down to one tensor, which is no group at all.
    cycles = run_until(neg, group(2, {{"g.1", {2}}}), 1);
    ASSERT_EQ(cycles.size(), 1u);
    EXPECT_EQ(names_of(cycles[0]), (std::vector<std::string>{"g.1"}));
  });
}

TEST(NegotiatorGroups, MemberChangedOnOneRankOnlyFailsThatMemberAndReleasesTheGroup) {
  // Rank 1 sends g.1 with another shape: on rank 0 the whole group is a cache hit, on rank 1
  // g.0 is a hit and g.1 invalid. Both come back together on both ranks, g.1 as the mismatch.
  const int n = 2;
  FakeCluster c(n);
  run_ranks(n, [&](int rank) {
    auto channel = fake::make_fake_control(c.world, iota_ranks(n), rank, "ctl");
    Negotiator neg(*channel, {iota_ranks(n), 16, {}}, c.clock, c.log, nullptr);
    ASSERT_EQ(run_until(neg, group(0, {{"g.0", {3}}, {"g.1", {2}}}), 2).size(), 1u);
    std::vector<Cycle> cycles = run_until(neg, group(1, {{"g.0", {3}}, {"g.1", {rank == 1 ? 5 : 2}}}), 2);
    ASSERT_EQ(cycles.size(), 1u) << "rank " << rank;
    ASSERT_EQ(names_of(cycles[0]), (std::vector<std::string>{"g.0", "g.1"}));
    EXPECT_EQ(cycles[0].responses[0]->type, ResponseType::kAllreduce);
    EXPECT_EQ(cycles[0].responses[1]->type, ResponseType::kError);
    EXPECT_NE(cycles[0].responses[1]->error.find("ranks [1] sent [5]"), std::string::npos)
        << cycles[0].responses[1]->error;
  });
}

TEST(NegotiatorGroups, ChangedGroupSubmittedACycleLaterOnOneRank) {
  // Rank 0 submits the changed group while rank 1 is still busy: rank 0's invalidation drops the
  // cached member everywhere, so rank 1's later submission goes to the coordinator whole too.
  const int n = 2;
  FakeCluster c(n);
  run_ranks(n, [&](int rank) {
    auto channel = fake::make_fake_control(c.world, iota_ranks(n), rank, "ctl");
    Negotiator neg(*channel, {iota_ranks(n), 16, {}}, c.clock, c.log, nullptr);
    ASSERT_EQ(run_until(neg, group(0, {{"g.0", {3}}, {"g.1", {2}}}), 2).size(), 1u);
    std::vector<Request> changed = group(1, {{"g.0", {3}}, {"g.1", {5}}});
    CycleInput first;
    if (rank == 0) first.requests = changed;
    Result<CycleOutput> out = neg.run_cycle(std::move(first));
    ASSERT_TRUE(out.is_ok());
    EXPECT_TRUE(out->responses.empty());
    std::vector<Cycle> cycles = run_until(neg, rank == 1 ? changed : std::vector<Request>{}, 2);
    ASSERT_EQ(cycles.size(), 1u) << "rank " << rank;
    EXPECT_EQ(names_of(cycles[0]), (std::vector<std::string>{"g.0", "g.1"}));
    EXPECT_EQ(cycles[0].responses[1]->shapes[0], (std::vector<int64_t>{5}));
  });
}

TEST(NegotiatorGroups, StalledMemberFailsAndTheReadyMembersAreReleased) {
  // Rank 1 never submits g.1: once the stall inspector fails it, g.0 (ready, held for its
  // group) is released instead of being held for good.
  const int n = 2;
  FakeCluster c(n);
  run_ranks(n, [&](int rank) {
    auto channel = fake::make_fake_control(c.world, iota_ranks(n), rank, "ctl");
    StallOptions stall{true, 0.05, 0.2};
    Negotiator neg(*channel, {iota_ranks(n), 16, stall}, c.clock, c.log, nullptr);
    std::vector<ResponsePtr> got;
    for (int i = 0; i < 100 && got.size() < 2; ++i) {
      CycleInput in;
      if (i == 0) in.requests = rank == 0 ? group(0, {{"g.0", {3}}, {"g.1", {2}}}) : group(0, {{"g.0", {3}}});
      Result<CycleOutput> out = neg.run_cycle(std::move(in));
      ASSERT_TRUE(out.is_ok());
      got.insert(got.end(), out->responses.begin(), out->responses.end());
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_EQ(got.size(), 2u) << "rank " << rank;
    EXPECT_EQ(got[0]->names[0], "g.1");
    EXPECT_EQ(got[0]->type, ResponseType::kError);
    EXPECT_NE(got[0]->error.find("'g.1' stalled: ranks [1]"), std::string::npos) << got[0]->error;
    EXPECT_EQ(got[1]->names[0], "g.0");
    EXPECT_EQ(got[1]->type, ResponseType::kAllreduce) << got[1]->error;
  });
}

}  // namespace
}  // namespace korovod
