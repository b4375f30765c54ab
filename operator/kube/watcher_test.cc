#include "kube/watcher.h"

#include <thread>

#include <gtest/gtest.h>

#include "kube/api_error.h"
#include "kube/fake_clock.h"
#include "kube/memory_client.h"
#include "kube/object_meta.h"

namespace kube {
namespace {

using resources::kConfigMaps;
using resources::kPods;
using E = WatcherEvent::Type;
using std::chrono::milliseconds;

Object named(const std::string& name) { return {{"metadata", {{"name", name}}}}; }

class WatcherTest : public ::testing::Test {
 protected:
  WatcherTest() {
    opts.ns = "ns";
    opts.page_size = 2;
    opts.poll = milliseconds(50);
    opts.on_error = [this](const std::string& e) { errors.push_back(e); };
  }
  WatcherEvent expect_event(Watcher& w) {
    auto ev = w.next();
    if (!ev) throw std::runtime_error("watcher stopped");
    return *ev;
  }
  FakeClock clock;
  MemoryClient client{clock};
  WatcherOptions opts;
  std::vector<std::string> errors;
};

TEST_F(WatcherTest, ListsAllPagesThenEmitsRestarted) {
  for (int i = 0; i < 5; ++i) client.create(kPods, "ns", named("p" + std::to_string(i)));
  client.create(kPods, "other", named("elsewhere"));
  Watcher w(client, kPods, opts, clock);
  const auto ev = expect_event(w);
  EXPECT_EQ(ev.type, E::Restarted);
  EXPECT_EQ(ev.objects.size(), 5u);
  EXPECT_EQ(client.request_count(Verb::List), 3);
  EXPECT_EQ(w.resource_version(), std::to_string(client.resource_version()));
  EXPECT_EQ(w.state(), Watcher::State::Listed);
}

TEST_F(WatcherTest, EmitsAppliedAndDeletedFromTheWatch) {
  Watcher w(client, kPods, opts, clock);
  EXPECT_EQ(expect_event(w).type, E::Restarted);
  auto p = client.create(kPods, "ns", named("p"));
  p["metadata"]["labels"] = {{"a", "b"}};
  client.update(kPods, "ns", p);
  client.remove(kPods, "ns", "p", {});
  EXPECT_EQ(expect_event(w).type, E::Applied);
  const auto mod = expect_event(w);
  EXPECT_EQ(mod.type, E::Applied);
  EXPECT_EQ(mod.object["metadata"]["labels"]["a"], "b");
  EXPECT_EQ(expect_event(w).type, E::Deleted);
  EXPECT_EQ(w.state(), Watcher::State::Watching);
}

TEST_F(WatcherTest, ResumesFromLastResourceVersionWhenStreamEnds) {
  Watcher w(client, kPods, opts, clock);
  expect_event(w);
  client.create(kPods, "ns", named("a"));
  EXPECT_EQ(name_of(expect_event(w).object), "a");
  client.end_watches();
  client.create(kPods, "ns", named("b"));
  const auto ev = expect_event(w);
  EXPECT_EQ(ev.type, E::Applied);  // no relist: resumed
  EXPECT_EQ(name_of(ev.object), "b");
  EXPECT_EQ(client.request_count(Verb::List), 1);
  EXPECT_EQ(client.request_count(Verb::Watch), 2);
}

TEST_F(WatcherTest, RelistsAfterGone) {
  Watcher w(client, kPods, opts, clock);
  expect_event(w);
  client.create(kPods, "ns", named("a"));
  expect_event(w);
  client.end_watches();
  client.set_watch_history(1);
  for (int i = 0; i < 3; ++i) client.create(kConfigMaps, "ns", named("c" + std::to_string(i)));
  client.create(kPods, "ns", named("b"));
  const auto ev = expect_event(w);
  EXPECT_EQ(ev.type, E::Restarted);
  EXPECT_EQ(ev.objects.size(), 2u);
  EXPECT_EQ(client.request_count(Verb::List), 2);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("410"), std::string::npos);
}

TEST_F(WatcherTest, RelistsAtOnceWhenWatchRequestFailsWithGone) {
  Watcher w(client, kPods, opts, clock);
  expect_event(w);
  client.fail_next(Verb::Watch, 1, gone_error("too old resource version"));
  client.create(kPods, "ns", named("a"));
  const auto ev = expect_event(w);  // no clock advance needed: a 410 does not back off
  EXPECT_EQ(ev.type, E::Restarted);
  EXPECT_EQ(ev.objects.size(), 1u);
  EXPECT_EQ(client.request_count(Verb::List), 2);
}

// Opt-in, as client-go's reflector did: first list from the watch cache (resourceVersion=0,
// later pages by continue token only), a relist after 410 Gone as a consistent read ("").
TEST_F(WatcherTest, FirstListFromWatchCacheRelistAfterGoneConsistent) {
  opts.first_list_from_watch_cache = true;
  for (int i = 0; i < 3; ++i) client.create(kPods, "ns", named("p" + std::to_string(i)));
  std::vector<Request> lists;
  std::mutex mu;
  client.set_request_observer([&](const Request& r) {
    std::lock_guard lock(mu);
    if (r.verb == Verb::List) lists.push_back(r);
  });
  Watcher w(client, kPods, opts, clock);
  EXPECT_EQ(expect_event(w).type, E::Restarted);
  client.fail_next(Verb::Watch, 1, gone_error("too old resource version"));
  client.create(kPods, "ns", named("late"));
  EXPECT_EQ(expect_event(w).type, E::Restarted);
  std::lock_guard lock(mu);
  ASSERT_EQ(lists.size(), 4u);  // 3 pods in pages of 2, then 4 pods in pages of 2
  EXPECT_EQ(lists[0].resource_version, "0");
  EXPECT_EQ(lists[0].continue_token, "");
  EXPECT_EQ(lists[1].resource_version, "");
  EXPECT_NE(lists[1].continue_token, "");
  EXPECT_EQ(lists[2].resource_version, "");  // after the 410: consistent
  EXPECT_EQ(lists[2].continue_token, "");
}

TEST_F(WatcherTest, EveryListConsistentByDefault) {
  client.create(kPods, "ns", named("p"));
  std::vector<std::string> rvs;
  std::mutex mu;
  client.set_request_observer([&](const Request& r) {
    std::lock_guard lock(mu);
    if (r.verb == Verb::List) rvs.push_back(r.resource_version);
  });
  Watcher w(client, kPods, opts, clock);
  EXPECT_EQ(expect_event(w).type, E::Restarted);
  std::lock_guard lock(mu);
  EXPECT_EQ(rvs, (std::vector<std::string>{""}));
}

TEST_F(WatcherTest, BacksOffExponentiallyOnListErrors) {
  client.fail_next(Verb::List, 2, ApiError(500, "InternalError", "etcd down"));
  Watcher w(client, kPods, opts, clock);
  std::optional<WatcherEvent> ev;
  std::thread t([&] { ev = w.next(); });
  ASSERT_TRUE(clock.wait_for_waiters(1));
  EXPECT_EQ(w.state(), Watcher::State::Backoff);
  clock.advance(milliseconds(799));
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_EQ(client.request_count(Verb::List), 1);  // still waiting out the first 800ms
  clock.advance(milliseconds(1));
  // Second failure: waits 1600ms.
  while (client.request_count(Verb::List) < 2) std::this_thread::sleep_for(milliseconds(1));
  ASSERT_TRUE(clock.wait_for_waiters(1));
  clock.advance(milliseconds(1600));
  t.join();
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->type, E::Restarted);
  EXPECT_EQ(errors.size(), 2u);
}

TEST_F(WatcherTest, WatchErrorBacksOffThenRewatchesWithoutRelisting) {
  Watcher w(client, kPods, opts, clock);
  expect_event(w);
  client.fail_next(Verb::Watch, 1, ApiError(503, "ServiceUnavailable", "busy"));
  client.end_watches();
  client.create(kPods, "ns", named("a"));
  std::optional<WatcherEvent> ev;
  std::thread t([&] { ev = w.next(); });
  while (w.state() != Watcher::State::Backoff) std::this_thread::sleep_for(milliseconds(1));
  clock.advance(milliseconds(800));
  t.join();
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->type, E::Applied);
  EXPECT_EQ(name_of(ev->object), "a");
  EXPECT_EQ(client.request_count(Verb::List), 1);
}

TEST_F(WatcherTest, BookmarksAdvanceResourceVersionWithoutEvents) {
  Watcher w(client, kPods, opts, clock);
  expect_event(w);
  client.create(kPods, "ns", named("p"));
  expect_event(w);  // now the watch is open
  client.create(kConfigMaps, "ns", named("c"));
  client.send_bookmarks();
  const std::string want = std::to_string(client.resource_version());
  std::thread stopper([&] {
    while (w.resource_version() != want) std::this_thread::sleep_for(milliseconds(1));
    w.stop();
  });
  EXPECT_FALSE(w.next().has_value());  // the bookmark produced no event
  stopper.join();
  EXPECT_EQ(w.resource_version(), want);
}

TEST_F(WatcherTest, StopFromAnotherThreadUnblocksNext) {
  opts.poll = std::chrono::hours(1);
  Watcher w(client, kPods, opts, clock);
  expect_event(w);
  std::thread stopper([&] {
    clock.wait_for_waiters(1);  // the watcher is parked in the stream's next()
    w.stop();
  });
  EXPECT_FALSE(w.next().has_value());
  stopper.join();
  EXPECT_TRUE(w.stopped());
}

}  // namespace
}  // namespace kube
