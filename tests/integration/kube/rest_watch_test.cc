// RestClient watches against the real API server: order, incremental delivery, resuming after
// the connection is cut, and 410 Gone after an etcd compaction.
#include <gtest/gtest.h>

#include <future>

#include "cluster.h"
#include "kube/api_error.h"

namespace kube::testing {
namespace {
using namespace std::chrono_literals;

Object config_map(const std::string& name, const std::string& value) {
  return {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", name}}},
          {"data", {{"v", value}}}};
}

// The next non-bookmark event, or nullopt after `timeout`.
std::optional<WatchEvent> next_change(WatchStream& w, std::chrono::milliseconds timeout = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto e = w.next(std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now()));
    if (e && e->type != WatchEvent::Type::Bookmark) return e;
    if (w.ended()) return std::nullopt;
  }
  return std::nullopt;
}

std::string describe(const WatchEvent& e) {
  static const char* kNames[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};
  return std::string(kNames[int(e.type)]) + " " + e.object["metadata"].value("name", "?");
}

class RestWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_CLUSTER();
    client_ = make_client();
    ns_ = std::make_unique<TestNamespace>(*client_, "watch");
  }
  // A label keeps kube-root-ca.crt (created by the controller-manager) out of the stream.
  ListOptions ours(const std::string& rv) const {
    ListOptions o;
    o.label_selector = "test=watch";
    o.resource_version = rv;
    return o;
  }
  Object labelled(const std::string& name, const std::string& value) const {
    Object cm = config_map(name, value);
    cm["metadata"]["labels"] = {{"test", "watch"}};
    return cm;
  }
  std::unique_ptr<RestClient> client_;
  std::unique_ptr<TestNamespace> ns_;
};

TEST_F(RestWatchTest, EventsArriveInOrderAsTheyHappen) {
  const std::string ns = ns_->name();
  const ListResult start = client_->list(resources::kConfigMaps, ns, ours(""));
  auto w = client_->watch(resources::kConfigMaps, ns, ours(start.resource_version));

  Object cm = client_->create(resources::kConfigMaps, ns, labelled("a", "0"));
  // Delivered while the stream stays open, not when it ends.
  auto added = next_change(*w, 5s);
  ASSERT_TRUE(added);
  EXPECT_EQ(describe(*added), "ADDED a");

  for (int i = 1; i <= 3; ++i) {
    cm["data"]["v"] = std::to_string(i);
    cm = client_->update(resources::kConfigMaps, ns, cm);
  }
  client_->remove(resources::kConfigMaps, ns, "a", {});
  int64_t last_rv = std::stoll(rv_of(added->object));
  for (int i = 1; i <= 3; ++i) {
    auto e = next_change(*w);
    ASSERT_TRUE(e);
    EXPECT_EQ(describe(*e), "MODIFIED a");
    EXPECT_EQ(e->object["data"]["v"], std::to_string(i));
    EXPECT_GT(std::stoll(rv_of(e->object)), last_rv);
    last_rv = std::stoll(rv_of(e->object));
  }
  auto deleted = next_change(*w);
  ASSERT_TRUE(deleted);
  EXPECT_EQ(describe(*deleted), "DELETED a");
  EXPECT_FALSE(w->ended());
}

TEST_F(RestWatchTest, ResumesFromLastResourceVersionAfterTheConnectionIsCut) {
  const std::string ns = ns_->name();
  auto w = client_->watch(resources::kConfigMaps, ns,
                          ours(client_->list(resources::kConfigMaps, ns, ours("")).resource_version));
  client_->create(resources::kConfigMaps, ns, labelled("a", "0"));
  client_->create(resources::kConfigMaps, ns, labelled("b", "0"));
  std::string last_rv;
  for (int i = 0; i < 2; ++i) {
    auto e = next_change(*w);
    ASSERT_TRUE(e);
    last_rv = rv_of(e->object);
  }
  w->close();  // the cut
  EXPECT_TRUE(w->ended());

  // Changes while nobody watches.
  client_->create(resources::kConfigMaps, ns, labelled("c", "0"));
  client_->patch(resources::kConfigMaps, ns, "a", PatchType::Merge, R"({"data":{"v":"1"}})", {});
  client_->remove(resources::kConfigMaps, ns, "b", {});

  auto resumed = client_->watch(resources::kConfigMaps, ns, ours(last_rv));
  std::vector<std::string> seen;
  for (int i = 0; i < 3; ++i) {
    auto e = next_change(*resumed);
    ASSERT_TRUE(e) << "lost events after " << ::testing::PrintToString(seen);
    seen.push_back(describe(*e));
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"ADDED c", "MODIFIED a", "DELETED b"}));
  EXPECT_FALSE(next_change(*resumed, 500ms).has_value());  // and nothing twice
}

TEST_F(RestWatchTest, CloseUnblocksAWaitingNext) {
  auto w = client_->watch(resources::kConfigMaps, ns_->name(), ours(""));
  auto waiting = std::async(std::launch::async, [&] { return w->next(30s); });
  std::this_thread::sleep_for(200ms);
  const auto start = std::chrono::steady_clock::now();
  w->close();
  ASSERT_EQ(waiting.wait_for(5s), std::future_status::ready);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST_F(RestWatchTest, ServerSideTimeoutEndsTheStream) {
  ListOptions o = ours("");
  o.timeout_seconds = 1;
  auto w = client_->watch(resources::kConfigMaps, ns_->name(), o);
  EXPECT_TRUE(eventually([&] {
    w->next(100ms);
    return w->ended();
  }, 10s));
}

// Events are not held in the API server's watch cache (its default size for them is 0), so a
// watch from a compacted revision reaches etcd and fails with 410 Expired.
TEST_F(RestWatchTest, WatchFromCompactedRevisionIsGoneAndRelistRecovers) {
  const std::string ns = ns_->name();
  const Object event = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"name", "e"}}},
      {"involvedObject", {{"kind", "ConfigMap"}, {"name", "x"}, {"namespace", ns}}},
      {"reason", "Test"},
      {"message", "0"}};
  const Object created = client_->create(resources::kEvents, ns, event);
  const std::string old_rv = rv_of(created);
  // Two more writes, so the watch's start revision (old_rv + 1) is itself compacted.
  client_->patch(resources::kEvents, ns, "e", PatchType::Merge, R"({"message":"1"})", {});
  client_->patch(resources::kEvents, ns, "e", PatchType::Merge, R"({"message":"2"})", {});
  compact_etcd();

  ListOptions from_old;
  from_old.resource_version = old_rv;
  auto w = client_->watch(resources::kEvents, ns, from_old);
  auto e = next_change(*w);
  ASSERT_TRUE(e);
  ASSERT_EQ(e->type, WatchEvent::Type::Error) << e->object.dump();
  EXPECT_TRUE(is_gone(from_status(0, e->object))) << e->object.dump();
  EXPECT_FALSE(next_change(*w, 2s).has_value());
  EXPECT_TRUE(w->ended());

  // Relist, then watch from the list's version: current state plus new changes, no error.
  const ListResult relisted = client_->list(resources::kEvents, ns, {});
  ASSERT_EQ(relisted.items.size(), 1u);
  EXPECT_EQ(relisted.items[0]["message"], "2");
  ListOptions from_list;
  from_list.resource_version = relisted.resource_version;
  auto fresh = client_->watch(resources::kEvents, ns, from_list);
  client_->patch(resources::kEvents, ns, "e", PatchType::Merge, R"({"message":"3"})", {});
  auto change = next_change(*fresh);
  ASSERT_TRUE(change);
  EXPECT_EQ(change->type, WatchEvent::Type::Modified);
  EXPECT_EQ(change->object["message"], "3");
}

}  // namespace
}  // namespace kube::testing
