// kube::Watcher over RestClient against the real API server: after the resourceVersion it
// would resume from was compacted away, the server answers 410 and the Watcher relists.
#include "kube/watcher.h"

#include <gtest/gtest.h>

#include <thread>

#include "cluster.h"

namespace kube::testing {
namespace {
using namespace std::chrono_literals;

Object event_object(const std::string& ns, const std::string& name, const std::string& msg) {
  return {{"apiVersion", "v1"},
          {"kind", "Event"},
          {"metadata", {{"name", name}}},
          {"involvedObject", {{"kind", "ConfigMap"}, {"name", "x"}, {"namespace", ns}}},
          {"reason", "Test"},
          {"message", msg}};
}

std::map<std::string, std::string> messages(const std::vector<Object>& events) {
  std::map<std::string, std::string> out;
  for (const auto& e : events) out[name_of(e)] = e.value("message", "");
  return out;
}

// Events bypass the API server's watch cache, so a compacted resourceVersion really is gone.
TEST(WatcherIntegrationTest, RelistsWhenItsResourceVersionWasCompacted) {
  REQUIRE_CLUSTER();
  auto client = make_client();
  TestNamespace ns(*client, "relist");
  client->create(resources::kEvents, ns.name(), event_object(ns.name(), "a", "0"));

  RealClock clock;
  WatcherOptions o;
  o.ns = ns.name();
  o.watch_timeout_seconds = 1;  // the server ends each watch quickly: resumes happen
  o.poll = 200ms;
  o.backoff_base = 100ms;
  Watcher watcher(*client, resources::kEvents, o, clock);
  auto first = watcher.next();
  ASSERT_TRUE(first);
  ASSERT_EQ(first->type, WatcherEvent::Type::Restarted);
  EXPECT_EQ(messages(first->objects), (std::map<std::string, std::string>{{"a", "0"}}));
  const std::string listed_rv = watcher.resource_version();

  // While the watcher is not stepped (it opens its watch on the next step), the history
  // after its resourceVersion changes and is compacted away.
  client->patch(resources::kEvents, ns.name(), "a", PatchType::Merge, R"({"message":"1"})", {});
  client->create(resources::kEvents, ns.name(), event_object(ns.name(), "b", "0"));
  client->patch(resources::kEvents, ns.name(), "a", PatchType::Merge, R"({"message":"2"})", {});
  compact_etcd();

  // Resuming from listed_rv fails with 410; the watcher must relist and see the current state.
  std::optional<WatcherEvent> restarted;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < deadline) {
    auto ev = watcher.next();
    ASSERT_TRUE(ev);
    if (ev->type == WatcherEvent::Type::Restarted) {
      restarted = std::move(ev);
      break;
    }
  }
  ASSERT_TRUE(restarted) << "no relist after compaction (resumed from " << listed_rv << ")";
  EXPECT_EQ(messages(restarted->objects),
            (std::map<std::string, std::string>{{"a", "2"}, {"b", "0"}}));
  EXPECT_GT(std::stoll(watcher.resource_version()), std::stoll(listed_rv));
  watcher.stop();
}

}  // namespace
}  // namespace kube::testing
