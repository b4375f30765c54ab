// Response cache, fusion planning, messages, ConstructResponse and the negotiation cycle with
// N threads as N ranks over the fake transport.
#include <gtest/gtest.h>

#include <mutex>

#include "core/fusion.h"
#include "core/negotiator.h"
#include "core/response_builder.h"
#include "core/testing/test_ranks.h"
#include "transport/fake/fake_ranks.h"
#include "transport/fake/fake_world.h"

namespace korovod {
namespace {

using testing::FakeCluster;
using testing::iota_ranks;
using testing::run_ranks;

Request allreduce_request(const std::string& name, std::vector<int64_t> shape,
                          DataType dtype = DataType::kFloat32) {
  Request r;
  r.type = RequestType::kAllreduce;
  r.name = name;
  r.shape = std::move(shape);
  r.dtype = dtype;
  return r;
}

Response allreduce_response(const std::string& name, int64_t numel, DataType dtype = DataType::kFloat32) {
  Response r;
  r.type = ResponseType::kAllreduce;
  r.names = {name};
  r.sizes = {numel};
  r.shapes = {{numel}};
  r.dtype = dtype;
  return r;
}

TEST(ResponseCache, HitMissInvalidAndLruEviction) {
  ResponseCache cache(2);
  Request a = allreduce_request("a", {4});
  EXPECT_EQ(cache.lookup(a).state, ResponseCache::State::kMiss);
  cache.put(allreduce_response("a", 4), a);
  EXPECT_EQ(cache.lookup(a).state, ResponseCache::State::kHit);
  Request a_other = allreduce_request("a", {5});
  EXPECT_EQ(cache.lookup(a_other).state, ResponseCache::State::kInvalid);
  cache.put(allreduce_response("b", 1), allreduce_request("b", {1}));
  cache.touch(cache.lookup(a).bit);  // b is now least recently used
  cache.put(allreduce_response("c", 1), allreduce_request("c", {1}));
  EXPECT_EQ(cache.lookup(allreduce_request("b", {1})).state, ResponseCache::State::kMiss);
  EXPECT_EQ(cache.lookup(a).state, ResponseCache::State::kHit);
  EXPECT_EQ(cache.size(), 2);
}

TEST(Fusion, FusesMatchingAllreducesUpToThresholdWithLookAhead) {
  std::vector<Response> in = {allreduce_response("a", 10), allreduce_response("h", 10, DataType::kFloat16),
                              allreduce_response("b", 10), allreduce_response("big", 100),
                              allreduce_response("c", 5)};
  Response bcast = allreduce_response("x", 1);
  bcast.type = ResponseType::kBroadcast;
  in.push_back(bcast);
  std::vector<Response> out = fuse_responses(in, /*threshold_bytes=*/100);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].names, (std::vector<std::string>{"a", "b", "c"}));  // 100 bytes exactly
  EXPECT_EQ(out[0].sizes, (std::vector<int64_t>{10, 10, 5}));
  EXPECT_EQ(out[1].names, (std::vector<std::string>{"h"}));
  EXPECT_EQ(out[2].names, (std::vector<std::string>{"big"}));
  EXPECT_EQ(out[3].type, ResponseType::kBroadcast);
}

TEST(Fusion, ThresholdZeroDisablesFusionAndScalesMustMatch) {
  Response scaled = allreduce_response("s", 1);
  scaled.prescale = 2.0;
  EXPECT_EQ(fuse_responses({allreduce_response("a", 1), allreduce_response("b", 1)}, 0).size(), 2u);
  EXPECT_EQ(fuse_responses({allreduce_response("a", 1), scaled}, 1 << 20).size(), 2u);
}

TEST(Fusion, DeviceTensorsAreNeverFused) {
  // The fusion buffer is host memory: GPU tensors each go to the backend on their own.
  Response a = allreduce_response("gpu.a", 4), b = allreduce_response("gpu.b", 4);
  a.device = b.device = 0;
  std::vector<Response> out = fuse_responses({a, b, allreduce_response("c", 4), allreduce_response("d", 4)}, 1 << 20);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].names, (std::vector<std::string>{"gpu.a"}));
  EXPECT_EQ(out[1].names, (std::vector<std::string>{"gpu.b"}));
  EXPECT_EQ(out[2].names, (std::vector<std::string>{"c", "d"}));
}

std::vector<ResponsePtr> shared(std::vector<Response> responses) {
  std::vector<ResponsePtr> out;
  for (auto& r : responses) out.push_back(std::make_shared<const Response>(std::move(r)));
  return out;
}

TEST(FusionPlanner, ReusesTheLayoutOfTheSameResponsesAndReplansOtherwise) {
  FusionPlanner planner;
  std::vector<ResponsePtr> step = shared({allreduce_response("a", 10), allreduce_response("b", 10),
                                          allreduce_response("c", 10)});
  std::vector<ResponsePtr> first = planner.plan(step, 80);
  ASSERT_EQ(first.size(), 2u);  // a+b (80 bytes), then c
  EXPECT_EQ(first[0]->names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(first[1]->names, (std::vector<std::string>{"c"}));
  // The next step's same cached responses: the very same fused objects, nothing rebuilt.
  std::vector<ResponsePtr> again = planner.plan(step, 80);
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[0].get(), first[0].get());
  // Another threshold (autotune) or another response object (a re-cached tensor, even with
  // identical contents) plans anew.
  std::vector<ResponsePtr> wider = planner.plan(step, 1 << 20);
  ASSERT_EQ(wider.size(), 1u);
  EXPECT_EQ(wider[0]->names, (std::vector<std::string>{"a", "b", "c"}));
  std::vector<ResponsePtr> recached = step;
  recached[1] = std::make_shared<const Response>(allreduce_response("b", 10));
  std::vector<ResponsePtr> replanned = planner.plan(recached, 80);
  ASSERT_EQ(replanned.size(), 2u);
  EXPECT_NE(replanned[0].get(), first[0].get());
  EXPECT_EQ(replanned[0]->names, first[0]->names);
  // The earlier layout is still remembered alongside.
  EXPECT_EQ(planner.plan(step, 80)[0].get(), first[0].get());
  // A single response is handed on as it is.
  std::vector<ResponsePtr> one = {step[2]};
  EXPECT_EQ(planner.plan(one, 80)[0].get(), step[2].get());
}

TEST(Messages, RequestAndResponseListsRoundTrip) {
  RequestList rl;
  rl.shutdown = true;
  rl.requests.push_back(allreduce_request("grad/w:0", {3, 4}, DataType::kBFloat16));
  rl.requests[0].prescale = 0.5;
  Result<RequestList> back = parse_request_list(serialize(rl));
  ASSERT_TRUE(back.is_ok());
  EXPECT_TRUE(back->shutdown);
  EXPECT_TRUE(same_parameters(back->requests[0], rl.requests[0]));
  EXPECT_EQ(back->requests[0].name, "grad/w:0");
  ResponseList resp;
  resp.responses.push_back(error_response("x", "boom"));
  resp.joined_count = 2;
  Result<ResponseList> rback = parse_response_list(serialize(resp));
  ASSERT_TRUE(rback.is_ok());
  EXPECT_EQ(rback->responses[0].error, "boom");
  EXPECT_EQ(rback->joined_count, 2);
  EXPECT_FALSE(parse_response_list(serialize(resp).substr(0, 7)).is_ok());
}

// Regressions the runtime_messages fuzz target found (tests/fuzz/corpus/runtime_messages has the
// inputs): a count is checked against the bytes left before anything is allocated for it, a
// count past the old 2^24 limit was read as an empty list, and the shutdown byte has one
// encoding per value.
TEST(Messages, CorruptCountsAndShutdownBytesAreErrors) {
  auto bytes = [](std::initializer_list<unsigned char> b) { return std::string(b.begin(), b.end()); };
  // shutdown 1, 2^24 - 1 requests in 5 bytes: was a resize to 16M requests (gigabytes).
  EXPECT_FALSE(parse_request_list(bytes({1, 0xff, 0xff, 0xff, 0x00})).is_ok());
  // 2^24 requests: was skipped, leaving an empty list that parsed as valid.
  EXPECT_FALSE(parse_request_list(bytes({0, 0x00, 0x00, 0x00, 0x01})).is_ok());
  EXPECT_FALSE(parse_response_list(bytes({0, 0, 0, 0, 0, 0x00, 0x00, 0x00, 0x01})).is_ok());
  // shutdown 2 read as true re-encoded as 1.
  EXPECT_FALSE(parse_request_list(bytes({2, 0, 0, 0, 0})).is_ok());
  EXPECT_TRUE(parse_request_list(bytes({1, 0, 0, 0, 0})).is_ok());
  // One response whose names count (2^24 - 1) cannot fit in the bytes that follow.
  ResponseList one;
  one.responses.push_back(error_response("x", "boom"));
  std::string wire = serialize(one);
  const size_t names_count_at = 1 + 4 + 4 + 4;  // shutdown, joined_count, count, type
  wire.replace(names_count_at, 4, bytes({0xff, 0xff, 0xff, 0x00}));
  EXPECT_FALSE(parse_response_list(wire).is_ok());
  // The smallest valid lists still parse: empty requests and responses are not "too short".
  RequestList empty_request;
  empty_request.requests.resize(3);
  EXPECT_TRUE(parse_request_list(serialize(empty_request)).is_ok());
  ResponseList empty_response;
  empty_response.responses.resize(3);
  EXPECT_TRUE(parse_response_list(serialize(empty_response)).is_ok());
}

TEST(BuildResponse, MismatchedShapeNamesTensorAndRanks) {
  std::vector<std::optional<Request>> by_rank = {allreduce_request("t", {2}), allreduce_request("t", {3}),
                                                 allreduce_request("t", {2})};
  Response r = build_response("t", by_rank, {0, 1, 2});
  ASSERT_EQ(r.type, ResponseType::kError);
  EXPECT_NE(r.error.find("Mismatched shapes for tensor 't'"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("ranks [0, 2] sent [2]"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("ranks [1] sent [3]"), std::string::npos) << r.error;
}

TEST(BuildResponse, EachRankOnItsOwnGpuIsNoMismatchButCpuAgainstGpuIs) {
  Request gpu0 = allreduce_request("d", {4}), gpu1 = gpu0, cpu = gpu0;
  gpu0.device = 0;
  gpu1.device = 1;  // one rank per GPU: rank 1's tensors live on cuda:1
  EXPECT_EQ(build_response("d", {gpu0, gpu1}, {0, 1}).type, ResponseType::kAllreduce);
  Response r = build_response("d", {gpu0, cpu}, {0, 1});
  ASSERT_EQ(r.type, ResponseType::kError);
  EXPECT_NE(r.error.find("ranks [1] sent CPU"), std::string::npos) << r.error;
}

TEST(BuildResponse, AllgatherAllowsDifferentDim0AndRecordsIt) {
  Request a = allreduce_request("g", {2, 3});
  a.type = RequestType::kAllgather;
  Request b = a;
  b.shape = {5, 3};
  Response r = build_response("g", {a, b}, {0, 1});
  ASSERT_EQ(r.type, ResponseType::kAllgather) << r.error;
  EXPECT_EQ(r.sizes, (std::vector<int64_t>{2, 5}));
  b.shape = {5, 4};
  EXPECT_EQ(build_response("g", {a, b}, {0, 1}).type, ResponseType::kError);
}

// ---- the negotiation cycle over the fake transport ----

TEST(Negotiator, SteadyStateUsesOnlyTheBitVectorFastPath) {
  const int n = 4;
  FakeCluster c(n);
  std::mutex mu;
  std::vector<std::vector<bool>> slow_paths(n);
  run_ranks(n, [&](int rank) {
    auto channel = fake::make_fake_control(c.world, iota_ranks(n), rank, "ctl");
    Negotiator neg(*channel, {iota_ranks(n), 16, {}}, c.clock, c.log, nullptr);
    for (int step = 0; step < 3; ++step) {
      CycleInput in;
      in.requests = {allreduce_request("a", {4}), allreduce_request("b", {2})};
      Result<CycleOutput> out = neg.run_cycle(in);
      ASSERT_TRUE(out.is_ok()) << out.status().to_string();
      ASSERT_EQ(out->responses.size(), 2u);
      std::lock_guard lock(mu);
      slow_paths[rank].push_back(out->used_slow_path);
    }
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(slow_paths[r], (std::vector<bool>{true, false, false})) << r;
}

TEST(Negotiator, CachedHitsComeInCacheBitOrderSharedWithTheCacheAcrossWords) {
  // More tensors than one 64-bit word of the bit vector, submitted in a different order on each
  // rank: every rank gets them in the same (cache bit) order, as the cache's own objects.
  const int n = 2, tensors = 150;
  FakeCluster c(n);
  std::mutex mu;
  std::vector<std::vector<std::string>> order(n);
  run_ranks(n, [&](int rank) {
    auto channel = fake::make_fake_control(c.world, iota_ranks(n), rank, "ctl");
    Negotiator neg(*channel, {iota_ranks(n), 256, {}}, c.clock, c.log, nullptr);
    for (int step = 0; step < 2; ++step) {
      CycleInput in;
      for (int t = 0; t < tensors; ++t) {
        const int k = rank == 0 ? t : tensors - 1 - t;
        in.requests.push_back(allreduce_request("t" + std::to_string(k), {k + 1}));
      }
      Result<CycleOutput> out = neg.run_cycle(in);
      ASSERT_TRUE(out.is_ok()) << out.status().to_string();
      ASSERT_EQ(out->responses.size(), static_cast<size_t>(tensors));
      if (step == 0) continue;
      EXPECT_FALSE(out->used_slow_path);
      std::lock_guard lock(mu);
      for (const ResponsePtr& r : out->responses) {
        const ResponseCache::Lookup hit = neg.cache().lookup(allreduce_request(r->names[0], r->shapes[0]));
        ASSERT_EQ(hit.state, ResponseCache::State::kHit);
        EXPECT_EQ(neg.cache().shared_response(hit.bit).get(), r.get());
        order[rank].push_back(r->names[0]);
      }
    }
  });
  ASSERT_EQ(order[0].size(), static_cast<size_t>(tensors));
  EXPECT_EQ(order[0], order[1]);
}

TEST(Negotiator, RootParameterUpdateReachesEveryRankInTheSameFastPathCycle) {
  const int n = 3;
  FakeCluster c(n);
  std::mutex mu;
  std::vector<std::vector<std::string>> received(n);
  run_ranks(n, [&](int rank) {
    auto channel = fake::make_fake_control(c.world, iota_ranks(n), rank, "ctl");
    Negotiator neg(*channel, {iota_ranks(n), 16, {}}, c.clock, c.log, nullptr);
    for (int step = 0; step < 4; ++step) {
      CycleInput in;
      in.requests = {allreduce_request("a", {4})};
      if (rank == 0 && step == 2) in.param_update = "params-v1";
      Result<CycleOutput> out = neg.run_cycle(in);
      ASSERT_TRUE(out.is_ok()) << out.status().to_string();
      ASSERT_EQ(out->responses.size(), 1u);  // the update does not disturb the responses
      if (step == 2) {
        EXPECT_FALSE(out->used_slow_path);
      }
      std::lock_guard lock(mu);
      received[rank].push_back(out->param_update);
    }
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(received[r], (std::vector<std::string>{"", "", "params-v1", ""})) << r;
}

TEST(Negotiator, TensorIsReadyOnlyWhenEveryRankSubmittedIt) {
  const int n = 3;
  FakeCluster c(n);
  run_ranks(n, [&](int rank) {
    auto channel = fake::make_fake_control(c.world, iota_ranks(n), rank, "ctl");
    Negotiator neg(*channel, {iota_ranks(n), 16, {}}, c.clock, c.log, nullptr);
    CycleInput first;
    if (rank != 2) first.requests = {allreduce_request("late", {1})};
    Result<CycleOutput> out = neg.run_cycle(first);
    ASSERT_TRUE(out.is_ok());
    EXPECT_TRUE(out->responses.empty());
    CycleInput second;
    if (rank == 2) second.requests = {allreduce_request("late", {1})};
    out = neg.run_cycle(second);
    ASSERT_TRUE(out.is_ok());
    ASSERT_EQ(out->responses.size(), 1u);
    EXPECT_EQ(out->responses[0]->names[0], "late");
  });
}

TEST(Negotiator, CachedTensorWithNewShapeIsInvalidatedEverywhereAndErrorsOnMismatch) {
  const int n = 2;
  FakeCluster c(n);
  run_ranks(n, [&](int rank) {
    auto channel = fake::make_fake_control(c.world, iota_ranks(n), rank, "ctl");
    Negotiator neg(*channel, {iota_ranks(n), 16, {}}, c.clock, c.log, nullptr);
    ASSERT_TRUE(neg.run_cycle({{allreduce_request("t", {4})}, false, false, {}}).is_ok());
    // Rank 1 now sends another shape: a cache INVALID on rank 1, a HIT on rank 0.
    Result<CycleOutput> out = neg.run_cycle({{allreduce_request("t", {rank == 1 ? 5 : 4})}, false, false, {}});
    ASSERT_TRUE(out.is_ok());
    ASSERT_EQ(out->responses.size(), 1u);
    EXPECT_EQ(out->responses[0]->type, ResponseType::kError);
    EXPECT_NE(out->responses[0]->error.find("ranks [1] sent [5]"), std::string::npos);
    EXPECT_EQ(neg.cache().size(), 0);
  });
}

TEST(Negotiator, ShutdownOnOneRankStopsAll) {
  const int n = 3;
  FakeCluster c(n);
  run_ranks(n, [&](int rank) {
    auto channel = fake::make_fake_control(c.world, iota_ranks(n), rank, "ctl");
    Negotiator neg(*channel, {iota_ranks(n), 16, {}}, c.clock, c.log, nullptr);
    Result<CycleOutput> out = neg.run_cycle({{}, rank == 1, false, {}});
    ASSERT_TRUE(out.is_ok());
    EXPECT_TRUE(out->shutdown);
  });
}

TEST(Negotiator, StallShutdownFailsTensorNamingMissingRank) {
  const int n = 2;
  FakeCluster c(n);
  run_ranks(n, [&](int rank) {
    auto channel = fake::make_fake_control(c.world, iota_ranks(n), rank, "ctl");
    StallOptions stall{true, 0.05, 0.2};
    Negotiator neg(*channel, {iota_ranks(n), 16, stall}, c.clock, c.log, nullptr);
    CycleInput in;
    if (rank == 0) in.requests = {allreduce_request("only0", {1})};
    std::optional<Response> error;
    for (int i = 0; i < 100 && !error; ++i) {
      Result<CycleOutput> out = neg.run_cycle(i == 0 ? in : CycleInput{});
      ASSERT_TRUE(out.is_ok());
      if (!out->responses.empty()) error = *out->responses[0];
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_TRUE(error.has_value());
    EXPECT_EQ(error->type, ResponseType::kError);
    EXPECT_NE(error->error.find("'only0' stalled: ranks [1]"), std::string::npos) << error->error;
  });
}

TEST(Negotiator, JoinedRankLetsOthersProceedAndJoinCompletesWhenAllJoined) {
  const int n = 2;
  FakeCluster c(n);
  run_ranks(n, [&](int rank) {
    auto channel = fake::make_fake_control(c.world, iota_ranks(n), rank, "ctl");
    Negotiator neg(*channel, {iota_ranks(n), 16, {}}, c.clock, c.log, nullptr);
    Request join;
    join.type = RequestType::kJoin;
    join.name = "join";
    CycleInput in;
    in.requests = {rank == 1 ? join : allreduce_request("x", {3})};
    Result<CycleOutput> out = neg.run_cycle(in);
    ASSERT_TRUE(out.is_ok());
    ASSERT_EQ(out->responses.size(), 1u);
    EXPECT_EQ(out->responses[0]->names[0], "x");
    in.requests = rank == 0 ? std::vector<Request>{join} : std::vector<Request>{};
    out = neg.run_cycle(in);
    ASSERT_TRUE(out.is_ok());
    ASSERT_EQ(out->responses.size(), 1u);
    EXPECT_EQ(out->responses[0]->type, ResponseType::kJoin);
    EXPECT_EQ(out->responses[0]->last_joined_rank, 0);
  });
}

}  // namespace
}  // namespace korovod
