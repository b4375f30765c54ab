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
using T = WatchEvent::Type;
using std::chrono::milliseconds;

Object named(const std::string& name, Object labels = Object::object()) {
  return {{"metadata", {{"name", name}, {"labels", labels}}}};
}

class MemoryWatchTest : public ::testing::Test {
 protected:
  WatchEvent next(WatchStream& s) {
    auto ev = s.next(milliseconds(0));
    if (!ev) throw std::runtime_error("no event");
    return *ev;
  }
  ListOptions from(const std::string& rv) {
    ListOptions o;
    o.resource_version = rv;
    return o;
  }
  FakeClock clock;
  MemoryClient client{clock};
};

TEST_F(MemoryWatchTest, DeliversAddedModifiedDeleted) {
  const auto start = client.list(kPods, "ns", {}).resource_version;
  auto w = client.watch(kPods, "ns", from(start));
  auto p = client.create(kPods, "ns", named("p"));
  p["metadata"]["labels"]["x"] = "y";
  client.update(kPods, "ns", p);
  client.remove(kPods, "ns", "p", {});
  EXPECT_EQ(next(*w).type, T::Added);
  const auto mod = next(*w);
  EXPECT_EQ(mod.type, T::Modified);
  EXPECT_EQ(mod.object["metadata"]["labels"]["x"], "y");
  const auto del = next(*w);
  EXPECT_EQ(del.type, T::Deleted);
  EXPECT_GT(std::stoll(resource_version_of(del.object)), std::stoll(resource_version_of(mod.object)));
  EXPECT_FALSE(w->next(milliseconds(0)).has_value());
}

TEST_F(MemoryWatchTest, FiltersByResourceAndNamespace) {
  auto w = client.watch(kPods, "ns", from(std::to_string(client.resource_version())));
  client.create(kConfigMaps, "ns", named("c"));
  client.create(kPods, "other", named("p"));
  client.create(kPods, "ns", named("mine"));
  EXPECT_EQ(name_of(next(*w).object), "mine");
  EXPECT_FALSE(w->next(milliseconds(0)).has_value());
}

TEST_F(MemoryWatchTest, WithoutResourceVersionStartsWithCurrentState) {
  client.create(kPods, "ns", named("a"));
  client.create(kPods, "ns", named("b"));
  auto w = client.watch(kPods, "ns", {});
  EXPECT_EQ(name_of(next(*w).object), "a");
  EXPECT_EQ(name_of(next(*w).object), "b");
  EXPECT_FALSE(w->next(milliseconds(0)).has_value());
}

TEST_F(MemoryWatchTest, ResumesFromResourceVersion) {
  client.create(kPods, "ns", named("a"));
  const auto after_a = std::to_string(client.resource_version());
  client.create(kPods, "ns", named("b"));
  client.create(kPods, "ns", named("c"));
  auto w = client.watch(kPods, "ns", from(after_a));
  EXPECT_EQ(name_of(next(*w).object), "b");
  EXPECT_EQ(name_of(next(*w).object), "c");
}

TEST_F(MemoryWatchTest, TooOldResourceVersionIsGone) {
  client.set_watch_history(2);
  for (int i = 0; i < 5; ++i) client.create(kPods, "ns", named("p" + std::to_string(i)));
  auto w = client.watch(kPods, "ns", from("2"));  // versions 2..6 were written
  const auto ev = next(*w);
  EXPECT_EQ(ev.type, T::Error);
  EXPECT_EQ(ev.object["code"], 410);
  EXPECT_TRUE(w->ended());
  auto recent = client.watch(kPods, "ns", from("4"));  // history keeps rv 5 and 6
  EXPECT_EQ(name_of(next(*recent).object), "p3");
}

TEST_F(MemoryWatchTest, LabelSelectorTransitionsBecomeAddedAndDeleted) {
  ListOptions opts = from("0");
  opts.label_selector = "app=web";
  auto w = client.watch(kPods, "ns", opts);
  auto p = client.create(kPods, "ns", named("p", {{"app", "db"}}));
  EXPECT_FALSE(w->next(milliseconds(0)).has_value());
  p["metadata"]["labels"]["app"] = "web";
  p = client.update(kPods, "ns", p);
  EXPECT_EQ(next(*w).type, T::Added);
  p["metadata"]["labels"]["app"] = "db";
  client.update(kPods, "ns", p);
  EXPECT_EQ(next(*w).type, T::Deleted);
}

TEST_F(MemoryWatchTest, EndWatchesEndsStreamsAfterPendingEvents) {
  auto w = client.watch(kPods, "ns", from(std::to_string(client.resource_version())));
  client.create(kPods, "ns", named("p"));
  client.end_watches();
  EXPECT_FALSE(w->ended());  // one event still to read
  EXPECT_EQ(next(*w).type, T::Added);
  EXPECT_TRUE(w->ended());
}

TEST_F(MemoryWatchTest, BookmarksCarryCurrentResourceVersion) {
  auto w = client.watch(kPods, "ns", from("0"));
  client.create(kConfigMaps, "ns", named("c"));  // not delivered, but moves the rv
  client.send_bookmarks();
  const auto ev = next(*w);
  EXPECT_EQ(ev.type, T::Bookmark);
  EXPECT_EQ(resource_version_of(ev.object), std::to_string(client.resource_version()));
  ListOptions no_bookmarks = from("0");
  no_bookmarks.allow_watch_bookmarks = false;
  auto quiet = client.watch(kPods, "ns", no_bookmarks);
  client.send_bookmarks();
  EXPECT_FALSE(quiet->next(milliseconds(0)).has_value());
}

TEST_F(MemoryWatchTest, NextBlocksUntilEventAndCloseUnblocks) {
  auto w = client.watch(kPods, "ns", from("0"));
  std::thread writer([&] {
    clock.wait_for_waiters(1);
    client.create(kPods, "ns", named("p"));
  });
  auto ev = w->next(std::chrono::hours(1));
  writer.join();
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(name_of(ev->object), "p");
  std::thread closer([&] {
    clock.wait_for_waiters(1);
    w->close();
  });
  EXPECT_FALSE(w->next(std::chrono::hours(1)).has_value());
  closer.join();
  EXPECT_TRUE(w->ended());
}

TEST_F(MemoryWatchTest, ServerTimeoutEndsStream) {
  ListOptions opts = from("0");
  opts.timeout_seconds = 30;
  auto w = client.watch(kPods, "ns", opts);
  EXPECT_FALSE(w->ended());
  clock.advance(std::chrono::seconds(30));
  EXPECT_FALSE(w->next(milliseconds(0)).has_value());
  EXPECT_TRUE(w->ended());
}

TEST_F(MemoryWatchTest, ConcurrentWritersProduceUniqueIncreasingVersions) {
  auto w = client.watch(kPods, "", from("0"));
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t)
    writers.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i)
        client.create(kPods, "ns" + std::to_string(t), named("p" + std::to_string(i)));
    });
  for (auto& t : writers) t.join();
  int64_t last = 0;
  for (int i = 0; i < 200; ++i) {
    const int64_t rv = std::stoll(resource_version_of(next(*w).object));
    EXPECT_GT(rv, last);
    last = rv;
  }
  EXPECT_EQ(client.list(kPods, "", {}).items.size(), 200u);
}

}  // namespace
}  // namespace kube
