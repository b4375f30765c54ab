#include "kube/store.h"

#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "kube/object_meta.h"

namespace kube {
namespace {

Object obj(const std::string& ns, const std::string& name, Object labels = Object::object(),
           const std::string& rv = "1") {
  return {{"metadata",
           {{"namespace", ns}, {"name", name}, {"labels", labels}, {"resourceVersion", rv}}}};
}

Object owned(const std::string& name, const std::string& owner_uid, bool controller) {
  Object o = obj("ns", name);
  o["metadata"]["ownerReferences"] = Object::array(
      {{{"uid", owner_uid}, {"kind", "MPIJob"}, {"name", "j"}, {"controller", controller}}});
  return o;
}

std::vector<std::string> names(const std::vector<Object>& objs) {
  std::vector<std::string> out;
  for (const auto& o : objs) out.push_back(name_of(o));
  return out;
}

std::vector<std::string> names(const std::vector<ObjectEvent>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.emplace_back(e.name());
  return out;
}

TEST(Store, GetReturnsWhatWasUpserted) {
  Store s;
  const Store::Diff d = s.upsert(obj("ns", "a", {{"x", "1"}}));
  ASSERT_EQ(d.added.size(), 1u);
  EXPECT_TRUE(d.updated.empty());
  EXPECT_EQ(d.added[0].key(), "ns/a");
  const auto got = s.get("ns", "a");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ((*got)["metadata"]["labels"]["x"], "1");
  EXPECT_FALSE(s.get("other", "a").has_value());
  EXPECT_EQ(s.size(), 1u);
}

TEST(Store, UpsertReturnsPreviousState) {
  Store s;
  s.upsert(obj("ns", "a", {{"v", "1"}}));
  const Store::Diff d = s.upsert(obj("ns", "a", {{"v", "2"}}));
  ASSERT_EQ(d.updated.size(), 1u);
  EXPECT_TRUE(d.added.empty());
  EXPECT_EQ(d.updated[0].first.object()["metadata"]["labels"]["v"], "1");
  EXPECT_EQ(d.updated[0].second.object()["metadata"]["labels"]["v"], "2");
  EXPECT_EQ((*s.get("ns", "a"))["metadata"]["labels"]["v"], "2");
  EXPECT_EQ(s.size(), 1u);
}

TEST(Store, EraseRemovesFromEveryIndex) {
  Store s;
  s.upsert(owned("a", "u1", true));
  EXPECT_EQ(names(s.erase(obj("ns", "a")).deleted), std::vector<std::string>{"a"});
  EXPECT_TRUE(s.erase(obj("ns", "a")).deleted.empty());
  EXPECT_TRUE(s.list("ns").empty());
  EXPECT_TRUE(s.by_owner("u1").empty());
}

TEST(Store, ListFiltersByNamespaceAndSelectorSorted) {
  Store s;
  s.upsert(obj("b", "z", {{"app", "web"}}));
  s.upsert(obj("a", "y", {{"app", "web"}, {"tier", "x"}}));
  s.upsert(obj("a", "x", {{"app", "db"}}));
  EXPECT_EQ(names(s.list()), (std::vector<std::string>{"x", "y", "z"}));
  EXPECT_EQ(names(s.list("a")), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(names(s.list("", LabelSelector::parse("app=web"))), (std::vector<std::string>{"y", "z"}));
  EXPECT_EQ(names(s.list("a", LabelSelector::parse("app=web"))), (std::vector<std::string>{"y"}));
  EXPECT_EQ(names(s.list("", LabelSelector::parse("app!=web"))), (std::vector<std::string>{"x"}));
  EXPECT_EQ(names(s.list("", LabelSelector::parse("tier"))), (std::vector<std::string>{"y"}));
  EXPECT_TRUE(s.list("", LabelSelector::parse("app=none")).empty());
  EXPECT_TRUE(s.list("", LabelSelector::nothing()).empty());
}

TEST(Store, LabelIndexFollowsUpdates) {
  Store s;
  s.upsert(obj("ns", "a", {{"app", "web"}}));
  s.upsert(obj("ns", "a", {{"app", "db"}}));
  EXPECT_TRUE(s.list("", LabelSelector::parse("app=web")).empty());
  EXPECT_EQ(s.list("", LabelSelector::parse("app=db")).size(), 1u);
}

TEST(Store, ByOwnerAndByController) {
  Store s;
  s.upsert(owned("controlled", "u1", true));
  s.upsert(owned("referenced", "u1", false));
  s.upsert(owned("other", "u2", true));
  EXPECT_EQ(names(s.by_owner("u1")), (std::vector<std::string>{"controlled", "referenced"}));
  EXPECT_EQ(names(s.by_controller("u1")), (std::vector<std::string>{"controlled"}));
  EXPECT_TRUE(s.by_owner("nobody").empty());
}

TEST(Store, StripsManagedFieldsByDefault) {
  Object o = obj("ns", "a");
  o["metadata"]["managedFields"] = Object::array({{{"manager", "kubectl"}}});
  Store stripping;
  stripping.upsert(o);
  EXPECT_FALSE((*stripping.get("ns", "a"))["metadata"].contains("managedFields"));
  Store keeping(StoreOptions{false, nullptr});
  keeping.upsert(o);
  EXPECT_TRUE((*keeping.get("ns", "a"))["metadata"].contains("managedFields"));
}

TEST(Store, TransformRunsBeforeStoring) {
  StoreOptions opts;
  opts.transform = [](Object& o) { o.erase("spec"); };
  Store s(opts);
  Object o = obj("ns", "a");
  o["spec"] = {{"big", std::string(1000, 'x')}};
  s.upsert(o);
  EXPECT_FALSE(s.get("ns", "a")->contains("spec"));
}

TEST(Store, ReplaceSwapsContentAndReportsDiff) {
  Store s;
  s.upsert(obj("ns", "kept", {}, "1"));
  s.upsert(obj("ns", "changed", {}, "1"));
  s.upsert(obj("ns", "vanished", {}, "1"));
  const auto diff = s.replace({obj("ns", "kept", {}, "1"), obj("ns", "changed", {}, "2"),
                               obj("ns", "new", {{"app", "web"}}, "3")});
  EXPECT_EQ(names(diff.added), (std::vector<std::string>{"new"}));
  ASSERT_EQ(diff.updated.size(), 1u);
  EXPECT_EQ(diff.updated[0].first.resource_version(), "1");
  EXPECT_EQ(diff.updated[0].second.resource_version(), "2");
  EXPECT_EQ(resource_version_of(diff.updated[0].first.object()), "1");
  EXPECT_EQ(diff.updated[0].second.object(), *s.get("ns", "changed"));
  EXPECT_EQ(diff.deleted[0].object(), obj("ns", "vanished", {}, "1"));
  EXPECT_EQ(names(diff.deleted), (std::vector<std::string>{"vanished"}));
  EXPECT_EQ(s.keys(), (std::vector<std::string>{"ns/changed", "ns/kept", "ns/new"}));
  EXPECT_EQ(s.list("", LabelSelector::parse("app=web")).size(), 1u);
}

// A relist packs its entries into shared blocks (store.cc, EntryBlock): several blocks' worth of
// objects, a duplicate key inside the list, then updates and deletes that free entries out of
// the blocks one by one, and a second relist that frees the rest. Every read must see exactly
// what was stored (ASan/valgrind would catch a block freed while an entry still lives in it).
TEST(Store, RelistBlocksOutliveNoneOfTheirEntries) {
  Store s;
  const std::string payload(2000, 'x');
  auto make = [&](int i, const std::string& rv) {
    Object o = obj("ns", "o" + std::to_string(i), {{"i", std::to_string(i % 7)}}, rv);
    o["data"] = {{"payload", payload + std::to_string(i)}};
    return o;
  };
  std::vector<Object> list;
  for (int i = 0; i < 400; ++i) list.push_back(make(i, "1"));  // ~800 KB: more than 3 blocks
  list.push_back(make(7, "1b"));                              // the same key again: last wins
  s.replace(std::move(list));
  ASSERT_EQ(s.size(), 400u);
  EXPECT_EQ(resource_version_of(*s.get("ns", "o7")), "1b");
  for (int i = 0; i < 400; i += 3) s.upsert(make(i, "2"));
  for (int i = 1; i < 400; i += 3) s.erase(make(i, "1"));
  for (int i = 0; i < 400; ++i) {
    const auto got = s.get("ns", "o" + std::to_string(i));
    if (i % 3 == 1) {
      EXPECT_FALSE(got) << i;
      continue;
    }
    ASSERT_TRUE(got) << i;
    EXPECT_EQ((*got)["data"]["payload"], payload + std::to_string(i));
    EXPECT_EQ(resource_version_of(*got), i % 3 == 0 ? "2" : (i == 7 ? "1b" : "1"));
  }
  EXPECT_EQ(s.list("", LabelSelector::parse("i=3")).size(), 38u);  // i%7==3, i%3!=1
  std::vector<Object> again;
  for (int i = 0; i < 10; ++i) again.push_back(make(i, "3"));
  const auto diff = s.replace(std::move(again));
  EXPECT_EQ(s.size(), 10u);
  EXPECT_EQ(diff.deleted.size(), 400u - 133u - 10u + 3u);  // 267 live before; o1,o4,o7 re-added
  EXPECT_EQ((*s.get("ns", "o9"))["data"]["payload"], payload + "9");
}

TEST(Store, ClusterScopedKeysHaveNoNamespace) {
  Store s;
  s.upsert(Object{{"metadata", {{"name", "node1"}}}});
  EXPECT_EQ(s.keys(), (std::vector<std::string>{"node1"}));
  EXPECT_TRUE(s.get("", "node1").has_value());
}

TEST(Store, PackedEntriesAreSmallerThanTheirJsonText) {
  Store s;
  Object o = obj("ns", "a", {{"app", "web"}});
  o["spec"] = {{"containers", Object::array({{{"name", "c"}, {"image", "busybox:1.36"},
                                              {"args", {"sleep", "3600"}}}})}};
  for (int i = 0; i < 100; ++i) {
    o["metadata"]["name"] = "pod-" + std::to_string(i);
    s.upsert(o);
  }
  const size_t per_object = s.approx_bytes() / 100;
  EXPECT_GT(per_object, 0u);
  EXPECT_LT(per_object, 2 * o.dump().size() + 600);
}

TEST(Store, ReadersRunConcurrentlyWithTheWriter) {
  Store s;
  std::atomic<bool> done{false};
  std::atomic<int> reads{0};
  std::thread reader([&] {
    while (!done) {
      for (const auto& o : s.list("ns")) ASSERT_FALSE(name_of(o).empty());
      ++reads;
    }
  });
  // The writes start once the reader is reading: on a loaded machine the 500 writes could
  // otherwise be over before the reader thread first runs.
  while (reads.load() == 0) std::this_thread::yield();
  for (int i = 0; i < 500; ++i) {
    s.upsert(obj("ns", "p" + std::to_string(i % 50), {}, std::to_string(i)));
    if (i % 100 == 0) s.replace({obj("ns", "p0")});
  }
  done = true;
  reader.join();
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(s.size(), 50u);
}


TEST(Store, ObjectsReadBackExactlyAsStoredWhateverTheEntryLeavesOut) {
  Store s;
  Object pod = obj("ns", "a", {{"app", "web"}, {"tier", "1"}}, "7");
  pod["kind"] = "Pod";
  pod["apiVersion"] = "v1";
  pod["spec"] = {{"nodeName", "n1"}};
  Object other_type = obj("ns", "b", {}, "8");
  other_type["kind"] = "Other";
  other_type["apiVersion"] = "example.com/v1";
  Object untyped = obj("", "node1", {}, "9");
  Object no_name = {{"metadata", {{"namespace", "ns"}}}, {"kind", "Pod"}};
  Object numeric_meta = {{"metadata", {{"name", "c"}, {"resourceVersion", 5}}}};
  Object owned_pod = owned("d", "u1", true);
  owned_pod["kind"] = "Pod";
  owned_pod["apiVersion"] = "v1";
  owned_pod["metadata"]["uid"] = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";  // packed as 16 bytes
  pod["metadata"]["uid"] = "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0";      // not canonical: kept
  Object odd_uid = obj("ns", "e");
  odd_uid["metadata"]["uid"] = "not-a-uuid-but-exactly-36-chars-long";
  for (const Object& o : {pod, other_type, untyped, no_name, numeric_meta, owned_pod, odd_uid}) {
    s.upsert(o);
    const auto got = s.get_by_key(object_key(o));
    ASSERT_TRUE(got.has_value()) << o.dump();
    EXPECT_EQ(*got, o);
  }
  EXPECT_EQ(s.list("ns", LabelSelector::parse("app=web,tier=1")), std::vector<Object>{pod});
  EXPECT_EQ(s.by_controller("u1"), std::vector<Object>{owned_pod});
  const auto diff = s.replace({pod});
  EXPECT_EQ(diff.deleted.size(), 6u);
  EXPECT_TRUE(diff.added.empty());
  EXPECT_EQ(s.list(), std::vector<Object>{pod});
}

}  // namespace
}  // namespace kube
