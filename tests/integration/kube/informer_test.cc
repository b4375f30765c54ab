// kube::Informer over RestClient against the real API server: after 1,000 concurrent
// changes (creates, updates, deletes) its store matches a fresh list.
#include "kube/informer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <thread>

#include "cluster.h"

namespace kube::testing {
namespace {
using namespace std::chrono_literals;

std::map<std::string, std::string> versions(const std::vector<Object>& objects) {
  std::map<std::string, std::string> out;
  for (const auto& o : objects) out[name_of(o)] = rv_of(o);
  return out;
}

Object config_map(const std::string& name, int value) {
  return {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", name}}},
          {"data", {{"v", std::to_string(value)}}}};
}

TEST(InformerIntegrationTest, StoreConvergesWithTheApiAfterAThousandChanges) {
  REQUIRE_CLUSTER();
  auto client = make_client();
  TestNamespace ns(*client, "informer");
  for (int i = 0; i < 50; ++i)  // some state before the first list
    client->create(resources::kConfigMaps, ns.name(), config_map("pre-" + std::to_string(i), 0));

  RealClock clock;
  InformerOptions o;
  o.watcher.ns = ns.name();
  o.watcher.page_size = 100;  // the initial list takes several pages
  std::atomic<int> adds{0}, updates{0}, deletes{0};
  Informer informer(*client, resources::kConfigMaps, o, clock);
  informer.on_add([&](const ObjectEvent&) { ++adds; });
  informer.on_update([&](const ObjectEvent&, const ObjectEvent&) { ++updates; });
  informer.on_delete([&](const ObjectEvent&) { ++deletes; });
  informer.start();
  ASSERT_TRUE(informer.wait_for_sync(30s));
  EXPECT_EQ(informer.store().size(), 51u);  // ours + kube-root-ca.crt

  // 8 writers × 125 changes: each creates 50 objects, updates 50 (10 of them three times)
  // and deletes 25.
  constexpr int kWriters = 8;
  std::atomic<int> changes{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      const auto name = [w](int i) { return "w" + std::to_string(w) + "-" + std::to_string(i); };
      for (int i = 0; i < 50; ++i, ++changes)
        client->create(resources::kConfigMaps, ns.name(), config_map(name(i), 0));
      for (int i = 0; i < 30; ++i) {
        for (int round = 1; round <= (i < 10 ? 3 : 1); ++round, ++changes) {
          if (i >= 10 || round < 3) {
            client->patch(resources::kConfigMaps, ns.name(), name(i), PatchType::Merge,
                          R"({"data":{"v":")" + std::to_string(round) + R"("}})", {});
          } else {
            Object cm = client->get(resources::kConfigMaps, ns.name(), name(i));
            cm["data"]["v"] = "3";
            client->update(resources::kConfigMaps, ns.name(), cm);
          }
        }
      }
      for (int i = 25; i < 50; ++i, ++changes)
        client->remove(resources::kConfigMaps, ns.name(), name(i), {});
    });
  }
  for (auto& t : writers) t.join();
  ASSERT_EQ(changes, 1000);

  const auto expected = versions(client->list(resources::kConfigMaps, ns.name(), {}).items);
  ASSERT_EQ(expected.size(), 51u + kWriters * 25u);
  const bool converged =
      eventually([&] { return versions(informer.store().list(ns.name())) == expected; }, 60s);
  EXPECT_TRUE(converged) << "store has " << informer.store().size() << " objects, API "
                         << expected.size();
  EXPECT_EQ(adds, 51 + kWriters * 50);
  EXPECT_EQ(deletes, kWriters * 25);
  // No relist happens in a healthy run, so every watch event reaches a handler exactly once.
  EXPECT_EQ(updates, kWriters * 50);
  const auto updated = informer.store().get(ns.name(), "w0-0");
  ASSERT_TRUE(updated);
  EXPECT_EQ((*updated)["data"]["v"], "3");
  informer.stop();
}

}  // namespace
}  // namespace kube::testing
