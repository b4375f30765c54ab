// The elastic driver against a fake world: a clock the test moves, discovery the test sets, a
// store as a map (with the order of writes), processes that exist only as names.
#include "launch/elastic_driver.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>

namespace korovod::launcher {
namespace {

using namespace std::chrono_literals;

class FakeWorld : public ElasticWorld {
 public:
  Clock::time_point clock{};
  Result<std::vector<HostSlots>> hosts = std::vector<HostSlots>{};
  std::map<std::string, std::string> store;
  std::vector<std::string> writes;  // keys, in order
  std::vector<std::string> started, stopped, said;

  Clock::time_point now() override { return clock; }
  Result<std::vector<HostSlots>> discover() override { return hosts; }
  Status set_key(const std::string& key, const std::string& value) override {
    store[key] = value;
    writes.push_back(key);
    return Status::ok();
  }
  Result<int64_t> add_to_key(const std::string& key, int64_t delta) override {
    const int64_t v = (store.count(key) ? std::stoll(store[key]) : 0) + delta;
    store[key] = std::to_string(v);
    if (delta != 0) writes.push_back(key);
    return v;
  }
  Result<std::optional<std::string>> read_key(const std::string& key) override {
    auto it = store.find(key);
    if (it == store.end()) return std::optional<std::string>();
    return std::optional<std::string>(it->second);
  }
  Status start_worker(const WorkerSlot& w) override {
    started.push_back(w.id());
    return Status::ok();
  }
  void stop_worker(const WorkerSlot& w) override { stopped.push_back(w.id()); }
  void say(const std::string& line) override { said.push_back(line); }

  std::string assign(int round, const std::string& id) { return store[fmt::format("elastic/{}/assign/{}", round, id)]; }
  void ready(int round, const std::string& id) { store[fmt::format("elastic/{}/ready/{}", round, id)] = "1"; }
  std::string all_said() const {
    std::string s;
    for (const std::string& l : said) s += l + "\n";
    return s;
  }
};

ElasticOptions opts(int min_np, std::optional<int> max_np = std::nullopt) {
  ElasticOptions o;
  o.start_np = min_np;
  o.min_np = min_np;
  o.max_np = max_np;
  o.elastic_timeout = 10s;
  return o;
}

HostBlacklist blacklist(int failures = 3) { return HostBlacklist(failures, std::nullopt, [] { return 0.0; }); }

// Ticks for `d` of fake time in 100 ms steps.
void run_for(ElasticDriver& d, FakeWorld& w, std::chrono::milliseconds span) {
  for (auto end = w.clock + span; w.clock < end; w.clock += 100ms) d.tick();
}

// Every member of the current round reports ready; the next tick sees the round formed (and may
// publish the next one at once: joins wait for exactly this).
void form(ElasticDriver& d, FakeWorld& w) {
  const int round = d.round();
  for (const RoundMember& m : d.members()) w.ready(round, m.worker.id());
  w.clock += 100ms;
  d.tick();
  ASSERT_TRUE(d.round_formed() || d.round() > round);
}

TEST(ElasticDriver, FirstRoundWaitsForNpAndPublishesAssignmentsBeforeTheRound) {
  FakeWorld w;
  w.hosts = std::vector<HostSlots>{{"a", 1}};
  ElasticDriver d(opts(2), blacklist(), w);
  run_for(d, w, 3s);
  EXPECT_EQ(d.round(), 0);
  EXPECT_TRUE(w.started.empty());
  w.hosts = std::vector<HostSlots>{{"a", 1}, {"b", 2}};
  run_for(d, w, 2s);
  ASSERT_EQ(d.round(), 1);
  EXPECT_EQ(w.store["elastic/round"], "1");
  EXPECT_EQ(w.assign(1, "a:0"), "0 3 0 1 0 2");
  EXPECT_EQ(w.assign(1, "b:0"), "1 3 0 2 1 2");
  EXPECT_EQ(w.assign(1, "b:1"), "2 3 1 2 0 1");
  EXPECT_EQ(w.writes.back(), "elastic/round");  // after every assignment; no hosts_version yet
  EXPECT_EQ(w.started, (std::vector<std::string>{"a:0", "b:0", "b:1"}));
  EXPECT_EQ(w.store.count("elastic/hosts_version"), 0u);
}

// min_np = np: the round without the failed worker is below min_np, so its own slot is planned
// again at once, with the same id and rank: still a new round, with a new process in that slot.
TEST(ElasticDriver, FailedWorkerAtMinNpIsReplacedInItsOwnSlotInANewRound) {
  FakeWorld w;
  w.hosts = std::vector<HostSlots>{{"h", 4}};
  ElasticDriver d(opts(2, 2), blacklist(), w);
  run_for(d, w, 200ms);
  form(d, w);
  ASSERT_EQ(w.started, (std::vector<std::string>{"h:0", "h:1"}));
  d.on_worker_exit({"h", 1}, 1);
  d.tick();
  ASSERT_EQ(d.round(), 2) << w.all_said();
  EXPECT_EQ(w.assign(2, "h:0"), "0 2 0 2 0 1");
  EXPECT_EQ(w.assign(2, "h:1"), "1 2 1 2 0 1");
  EXPECT_EQ(w.started, (std::vector<std::string>{"h:0", "h:1", "h:1"}));
  form(d, w);
  EXPECT_TRUE(d.round_formed());
  run_for(d, w, 2s);
  EXPECT_EQ(d.round(), 2);  // nothing changed since: no more rounds
  EXPECT_FALSE(d.outcome());
}

TEST(ElasticDriver, FailedWorkerLeavesAtOnceAndItsSlotRejoinsAfterTheRoundFormed) {
  FakeWorld w;
  w.hosts = std::vector<HostSlots>{{"localhost", 3}};
  ElasticDriver d(opts(2), blacklist(), w);
  run_for(d, w, 200ms);
  form(d, w);
  d.on_worker_exit({"localhost", 1}, 137);
  d.tick();
  ASSERT_EQ(d.round(), 2);
  EXPECT_EQ(w.assign(2, "localhost:0"), "0 2 0 2 0 1");  // rank 0 stays
  EXPECT_EQ(w.assign(2, "localhost:2"), "1 2 1 2 0 1");
  EXPECT_EQ(w.assign(2, "localhost:1"), "removed");
  EXPECT_EQ(w.store.count("elastic/hosts_version"), 0u);  // survivors learn it from failing ops
  run_for(d, w, 2s);
  EXPECT_EQ(d.round(), 2) << "no join before round 2 formed";
  form(d, w);
  ASSERT_EQ(d.round(), 3);
  EXPECT_EQ(w.assign(3, "localhost:1"), "2 3 2 3 0 1");  // the new process joins last
  EXPECT_EQ(w.store["elastic/hosts_version"], "1");
  EXPECT_EQ(w.store["elastic/hosts_kind"], "1");
  EXPECT_EQ(w.started.back(), "localhost:1");
}

TEST(ElasticDriver, RemovedHostLeavesWithNoticeAndIsStoppedOnceTheRoundForms) {
  FakeWorld w;
  w.hosts = std::vector<HostSlots>{{"a", 1}, {"b", 1}, {"c", 1}};
  ElasticDriver d(opts(2), blacklist(), w);
  run_for(d, w, 200ms);
  form(d, w);
  w.hosts = std::vector<HostSlots>{{"a", 1}, {"c", 1}};
  run_for(d, w, 1100ms);
  ASSERT_EQ(d.round(), 2);
  EXPECT_EQ(w.assign(2, "b:0"), "removed");
  EXPECT_EQ(w.assign(2, "c:0"), "1 2 0 1 1 2");
  EXPECT_EQ(w.store["elastic/hosts_kind"], "2");
  EXPECT_EQ(w.store["elastic/hosts_version"], "1");
  EXPECT_TRUE(w.stopped.empty()) << "b:0 may still reach its commit and leave by itself";
  form(d, w);
  EXPECT_EQ(w.stopped, std::vector<std::string>{"b:0"});
  d.on_worker_exit({"b", 0}, 1);  // not a member any more: no new round
  run_for(d, w, 500ms);
  EXPECT_EQ(d.round(), 2);
  EXPECT_FALSE(d.outcome());
}

TEST(ElasticDriver, BelowMinNpForTheElasticTimeoutFailsSayingWhy) {
  FakeWorld w;
  w.hosts = std::vector<HostSlots>{{"a", 1}, {"b", 1}};
  ElasticDriver d(opts(2), blacklist(), w);
  run_for(d, w, 200ms);
  form(d, w);
  w.hosts = std::vector<HostSlots>{{"a", 1}};
  run_for(d, w, 9s);
  EXPECT_FALSE(d.outcome());
  EXPECT_EQ(d.round(), 1);
  run_for(d, w, 2s);
  ASSERT_TRUE(d.outcome());
  EXPECT_EQ(d.outcome()->exit_code, 1);
  EXPECT_NE(d.outcome()->message.find("--elastic-timeout 10 s waiting for 2 worker slots (--min-np): 1 available"),
            std::string::npos)
      << d.outcome()->message;
}

TEST(ElasticDriver, SlotsBackInTimeEndTheWait) {
  FakeWorld w;
  w.hosts = std::vector<HostSlots>{{"a", 1}, {"b", 1}};
  ElasticDriver d(opts(2), blacklist(), w);
  run_for(d, w, 200ms);
  form(d, w);
  w.hosts = std::vector<HostSlots>{{"a", 1}};
  run_for(d, w, 5s);
  w.hosts = std::vector<HostSlots>{{"a", 1}, {"c", 1}};
  run_for(d, w, 1100ms);
  ASSERT_EQ(d.round(), 2);
  EXPECT_EQ(w.assign(2, "c:0"), "1 2 0 1 1 2");
  run_for(d, w, 20s);
  EXPECT_FALSE(d.outcome());
}

TEST(ElasticDriver, ResetLimitEndsTheJob) {
  FakeWorld w;
  w.hosts = std::vector<HostSlots>{{"a", 3}};
  ElasticOptions o = opts(1);
  o.reset_limit = 1;
  ElasticDriver d(o, blacklist(), w);
  run_for(d, w, 200ms);
  form(d, w);
  d.on_worker_exit({"a", 2}, 1);
  d.tick();
  ASSERT_EQ(d.round(), 2);  // reset 1 of 1
  d.on_worker_exit({"a", 1}, 1);
  d.tick();
  ASSERT_TRUE(d.outcome());
  EXPECT_NE(d.outcome()->message.find("exceeded --reset-limit 1"), std::string::npos) << d.outcome()->message;
}

TEST(ElasticDriver, FirstSuccessEndsTrainingAndTheJobEndsWithTheOthers) {
  FakeWorld w;
  w.hosts = std::vector<HostSlots>{{"a", 2}};
  ElasticDriver d(opts(1), blacklist(), w);
  run_for(d, w, 200ms);
  form(d, w);
  d.on_worker_exit({"a", 0}, 0);
  run_for(d, w, 1s);
  EXPECT_FALSE(d.outcome());
  EXPECT_EQ(d.round(), 1) << "no new round once training is over";
  d.on_worker_exit({"a", 1}, 0);
  d.tick();
  ASSERT_TRUE(d.outcome());
  EXPECT_EQ(d.outcome()->exit_code, 0);
}

TEST(ElasticDriver, EveryWorkerFailingEndsTheJobWithTheFirstCode) {
  FakeWorld w;
  w.hosts = std::vector<HostSlots>{{"a", 1}, {"b", 1}};
  ElasticDriver d(opts(1), blacklist(), w);
  run_for(d, w, 200ms);
  form(d, w);
  d.on_worker_exit({"b", 0}, 3);
  d.on_worker_exit({"a", 0}, 4);
  d.tick();
  ASSERT_TRUE(d.outcome());
  EXPECT_EQ(d.outcome()->exit_code, 3);
  EXPECT_NE(d.outcome()->message.find("every worker of round 1 has failed"), std::string::npos);
}

TEST(ElasticDriver, RepeatedFailuresBlacklistTheHostAndStopItsWorkers) {
  FakeWorld w;
  w.hosts = std::vector<HostSlots>{{"a", 1}, {"b", 2}};
  ElasticDriver d(opts(1), blacklist(2), w);
  run_for(d, w, 200ms);
  form(d, w);
  d.on_worker_exit({"b", 1}, 1);  // first failure of b
  d.tick();
  ASSERT_EQ(d.round(), 2);
  form(d, w);
  ASSERT_EQ(d.round(), 3);  // b:1 again, once round 2 formed
  EXPECT_EQ(w.started.back(), "b:1");
  d.on_worker_exit({"b", 1}, 1);  // second in a row (it never got ready): b is blacklisted
  EXPECT_EQ(w.stopped, std::vector<std::string>{"b:0"});
  d.tick();
  ASSERT_EQ(d.round(), 4);
  EXPECT_EQ(w.assign(4, "a:0"), "0 1 0 1 0 1");
  EXPECT_EQ(w.assign(4, "b:0"), "removed");
  d.on_worker_exit({"b", 0}, 143);
  run_for(d, w, 3s);
  EXPECT_EQ(d.round(), 4);
  EXPECT_FALSE(d.outcome());
  EXPECT_NE(w.all_said().find("host b blacklisted"), std::string::npos) << w.all_said();
}

TEST(ElasticDriver, FailingFirstDiscoveryIsFatalLaterOnesAreNot) {
  FakeWorld w;
  w.hosts = Status::unknown("host discovery script \"x\" failed");
  ElasticDriver d(opts(1), blacklist(), w);
  d.tick();
  ASSERT_TRUE(d.outcome());
  FakeWorld w2;
  w2.hosts = std::vector<HostSlots>{{"a", 1}};
  ElasticDriver d2(opts(1), blacklist(), w2);
  run_for(d2, w2, 200ms);
  w2.hosts = Status::unknown("flaky");
  run_for(d2, w2, 3s);
  EXPECT_FALSE(d2.outcome());
  EXPECT_EQ(d2.round(), 1);
}

TEST(ElasticDriver, NoSurvivorHoldingStateFailsTheJob) {
  FakeWorld w;
  w.hosts = std::vector<HostSlots>{{"a", 1}, {"b", 1}};
  ElasticDriver d(opts(1), blacklist(), w);
  run_for(d, w, 200ms);
  form(d, w);
  w.hosts = std::vector<HostSlots>{{"a", 1}, {"b", 1}, {"c", 1}};
  run_for(d, w, 1100ms);
  ASSERT_EQ(d.round(), 2);  // c joins
  d.on_worker_exit({"a", 0}, 9);
  d.on_worker_exit({"b", 0}, 9);
  d.tick();
  ASSERT_TRUE(d.outcome());
  EXPECT_EQ(d.outcome()->exit_code, 9);
  EXPECT_NE(d.outcome()->message.find("training state"), std::string::npos) << d.outcome()->message;
}

}  // namespace
}  // namespace korovod::launcher
