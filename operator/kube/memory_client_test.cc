#include "kube/memory_client.h"

#include <set>

#include <gtest/gtest.h>

#include "kube/api_error.h"
#include "kube/fake_clock.h"
#include "kube/object_meta.h"

namespace kube {
namespace {

using resources::kConfigMaps;
using resources::kNamespaces;
using resources::kPods;

Object pod(const std::string& name, Object labels = Object::object()) {
  return {{"metadata", {{"name", name}, {"labels", labels}}},
          {"spec", {{"containers", Object::array({{{"name", "c"}, {"image", "busybox"}}})}}}};
}

template <typename F>
ApiError error_of(F&& f) {
  try {
    f();
  } catch (const ApiError& e) {
    return e;
  }
  return ApiError(0, "NoError", "no error was thrown");
}

class MemoryClientTest : public ::testing::Test {
 protected:
  FakeClock clock;
  MemoryClient client{clock};
};

TEST_F(MemoryClientTest, CreateFillsServerSideMetadata) {
  const Object created = client.create(kPods, "ns", pod("p"));
  EXPECT_EQ(created["apiVersion"], "v1");
  EXPECT_EQ(created["kind"], "Pod");
  EXPECT_EQ(created["metadata"]["namespace"], "ns");
  EXPECT_EQ(uid_of(created).size(), 36u);
  EXPECT_EQ(created["metadata"]["creationTimestamp"], "2026-01-01T00:00:00Z");
  EXPECT_EQ(created["metadata"]["generation"], 1);
  EXPECT_EQ(resource_version_of(created), "2");  // an empty store is at version 1
  EXPECT_EQ(client.get(kPods, "ns", "p"), created);
}

TEST_F(MemoryClientTest, ResourceVersionIsGlobalAndIncreasing) {
  const auto a = client.create(kPods, "ns", pod("a"));
  const auto b = client.create(kConfigMaps, "ns", Object{{"metadata", {{"name", "b"}}}});
  EXPECT_LT(std::stoll(resource_version_of(a)), std::stoll(resource_version_of(b)));
  EXPECT_EQ(client.resource_version(), std::stoll(resource_version_of(b)));
  EXPECT_NE(uid_of(a), uid_of(b));
}

TEST_F(MemoryClientTest, CreateRejectsDuplicatesMissingNamesAndNamespaces) {
  client.create(kPods, "ns", pod("p"));
  EXPECT_TRUE(is_already_exists(error_of([&] { client.create(kPods, "ns", pod("p")); })));
  EXPECT_NO_THROW(client.create(kPods, "other", pod("p")));  // names are per namespace
  EXPECT_TRUE(is_invalid(error_of([&] { client.create(kPods, "ns", Object{{"metadata", Object::object()}}); })));
  EXPECT_TRUE(is_invalid(error_of([&] { client.create(kPods, "ns", pod("Bad_Name")); })));
  EXPECT_EQ(error_of([&] { client.create(kPods, "", pod("q")); }).code(), 400);
  Object wrong_ns = pod("q");
  wrong_ns["metadata"]["namespace"] = "a";
  EXPECT_EQ(error_of([&] { client.create(kPods, "b", wrong_ns); }).code(), 400);
}

TEST_F(MemoryClientTest, GenerateNameAddsRandomSuffix) {
  Object o = {{"metadata", {{"generateName", "job-"}}}};
  const auto a = client.create(kPods, "ns", o);
  const auto b = client.create(kPods, "ns", o);
  EXPECT_EQ(name_of(a).rfind("job-", 0), 0u);
  EXPECT_EQ(name_of(a).size(), 9u);
  EXPECT_NE(name_of(a), name_of(b));
}

TEST_F(MemoryClientTest, ClusterScopedResourcesIgnoreNamespace) {
  const auto ns = client.create(kNamespaces, "whatever", Object{{"metadata", {{"name", "team"}}}});
  EXPECT_FALSE(ns["metadata"].contains("namespace"));
  EXPECT_EQ(name_of(client.get(kNamespaces, "", "team")), "team");
}

TEST_F(MemoryClientTest, GetMissingIsNotFound) {
  EXPECT_TRUE(is_not_found(error_of([&] { client.get(kPods, "ns", "nope"); })));
}

TEST_F(MemoryClientTest, UpdateWithStaleResourceVersionConflicts) {
  const auto v1 = client.create(kPods, "ns", pod("p"));
  Object v2 = v1;
  v2["metadata"]["labels"]["x"] = "1";
  const auto stored = client.update(kPods, "ns", v2);
  EXPECT_NE(resource_version_of(stored), resource_version_of(v1));
  Object stale = v1;
  stale["metadata"]["labels"]["x"] = "2";
  EXPECT_TRUE(is_conflict(error_of([&] { client.update(kPods, "ns", stale); })));
  stale["metadata"].erase("resourceVersion");  // unconditional update
  EXPECT_EQ(client.update(kPods, "ns", stale)["metadata"]["labels"]["x"], "2");
}

TEST_F(MemoryClientTest, UpdateOfMissingObjectIsNotFound) {
  EXPECT_TRUE(is_not_found(error_of([&] { client.update(kPods, "ns", pod("p")); })));
}

TEST_F(MemoryClientTest, GenerationBumpsOnlyOnSpecChange) {
  auto o = client.create(kPods, "ns", pod("p"));
  o["metadata"]["labels"]["a"] = "b";
  o = client.update(kPods, "ns", o);
  EXPECT_EQ(o["metadata"]["generation"], 1);
  o["spec"]["nodeName"] = "n1";
  o = client.update(kPods, "ns", o);
  EXPECT_EQ(o["metadata"]["generation"], 2);
  o["status"] = {{"phase", "Running"}};
  o = client.update_status(kPods, "ns", o);
  EXPECT_EQ(o["metadata"]["generation"], 2);
}

TEST_F(MemoryClientTest, NoOpUpdateKeepsResourceVersion) {
  const auto o = client.create(kPods, "ns", pod("p"));
  EXPECT_EQ(resource_version_of(client.update(kPods, "ns", o)), resource_version_of(o));
  EXPECT_EQ(client.resource_version(), std::stoll(resource_version_of(o)));
}

TEST_F(MemoryClientTest, UpdateKeepsStatusAndUpdateStatusChangesOnlyStatus) {
  auto o = client.create(kPods, "ns", pod("p"));
  o["status"] = {{"phase", "Running"}};
  o["spec"]["nodeName"] = "n1";
  o = client.update_status(kPods, "ns", o);
  EXPECT_EQ(o["status"]["phase"], "Running");
  EXPECT_FALSE(o["spec"].contains("nodeName"));  // spec change ignored by update_status
  o["status"]["phase"] = "Failed";
  o["spec"]["nodeName"] = "n2";
  o = client.update(kPods, "ns", o);
  EXPECT_EQ(o["status"]["phase"], "Running");  // status change ignored by update
  EXPECT_EQ(o["spec"]["nodeName"], "n2");
}

TEST_F(MemoryClientTest, UpdateCannotChangeImmutableMetadata) {
  auto o = client.create(kPods, "ns", pod("p"));
  const std::string created = o["metadata"]["creationTimestamp"];
  o["metadata"]["creationTimestamp"] = "1999-01-01T00:00:00Z";
  o["metadata"]["labels"]["x"] = "y";
  o = client.update(kPods, "ns", o);
  EXPECT_EQ(o["metadata"]["creationTimestamp"], created);
  o["metadata"]["uid"] = "someone-else";
  EXPECT_TRUE(is_conflict(error_of([&] { client.update(kPods, "ns", o); })));
}

TEST_F(MemoryClientTest, ListFiltersByNamespaceLabelsAndFields) {
  client.create(kPods, "a", pod("p1", {{"app", "web"}}));
  client.create(kPods, "a", pod("p2", {{"app", "db"}}));
  client.create(kPods, "b", pod("p3", {{"app", "web"}}));
  EXPECT_EQ(client.list(kPods, "", {}).items.size(), 3u);
  EXPECT_EQ(client.list(kPods, "a", {}).items.size(), 2u);
  ListOptions web;
  web.label_selector = "app=web";
  EXPECT_EQ(client.list(kPods, "", web).items.size(), 2u);
  EXPECT_EQ(client.list(kPods, "a", web).items.size(), 1u);
  ListOptions by_name;
  by_name.field_selector = "metadata.name=p3";
  const auto r = client.list(kPods, "", by_name);
  ASSERT_EQ(r.items.size(), 1u);
  EXPECT_EQ(namespace_of(r.items[0]), "b");
  ListOptions bad;
  bad.label_selector = "app in (";
  EXPECT_EQ(error_of([&] { client.list(kPods, "", bad); }).code(), 400);
}

TEST_F(MemoryClientTest, ListPagesWithLimitAndContinue) {
  for (int i = 0; i < 5; ++i) client.create(kPods, "ns", pod("p" + std::to_string(i)));
  ListOptions opts;
  opts.limit = 2;
  std::set<std::string> seen;
  int pages = 0;
  std::string first_rv;
  do {
    const auto page = client.list(kPods, "ns", opts);
    if (first_rv.empty()) first_rv = page.resource_version;
    EXPECT_EQ(page.resource_version, first_rv);
    EXPECT_LE(page.items.size(), 2u);
    for (const auto& o : page.items) seen.insert(name_of(o));
    opts.continue_token = page.continue_token;
    ++pages;
  } while (!opts.continue_token.empty());
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(seen.size(), 5u);
}

TEST_F(MemoryClientTest, ExactlyOnePageHasNoContinueToken) {
  client.create(kPods, "ns", pod("a"));
  client.create(kPods, "ns", pod("b"));
  ListOptions opts;
  opts.limit = 2;
  EXPECT_TRUE(client.list(kPods, "ns", opts).continue_token.empty());
}

TEST_F(MemoryClientTest, AnyResourceWorksWithoutRegistration) {
  const Resource mpijobs{"kubeflow.org", "v2beta1", "mpijobs", "MPIJob", true};
  const auto o = client.create(mpijobs, "ns", Object{{"metadata", {{"name", "pi"}}}});
  EXPECT_EQ(o["apiVersion"], "kubeflow.org/v2beta1");
  EXPECT_EQ(client.list(mpijobs, "ns", {}).items.size(), 1u);
  EXPECT_TRUE(client.list(kPods, "ns", {}).items.empty());
}

TEST_F(MemoryClientTest, ObserverSeesEveryRequest) {
  std::vector<std::string> seen;
  client.set_request_observer(
      [&](const Request& r) { seen.push_back(std::string(verb_name(r.verb)) + " " + r.name); });
  client.create(kPods, "ns", pod("p"));
  client.get(kPods, "ns", "p");
  client.list(kPods, "ns", {});
  EXPECT_EQ(seen, (std::vector<std::string>{"create p", "get p", "list "}));
  EXPECT_EQ(client.request_count(Verb::Get), 1);
  EXPECT_EQ(client.request_count(Verb::Update), 0);
}

TEST_F(MemoryClientTest, FailNextFailsExactlyNCallsOfThatVerb) {
  client.create(kPods, "ns", pod("p"));
  client.fail_next(Verb::Get, 2, ApiError(500, "InternalError", "boom"));
  EXPECT_EQ(error_of([&] { client.get(kPods, "ns", "p"); }).code(), 500);
  EXPECT_NO_THROW(client.list(kPods, "ns", {}));  // other verbs unaffected
  EXPECT_EQ(error_of([&] { client.get(kPods, "ns", "p"); }).code(), 500);
  EXPECT_NO_THROW(client.get(kPods, "ns", "p"));
}

TEST_F(MemoryClientTest, FailNextCanTargetOneResource) {
  client.fail_next(Verb::Create, 1, ApiError(403, "Forbidden", "no"), "configmaps");
  EXPECT_NO_THROW(client.create(kPods, "ns", pod("p")));
  EXPECT_TRUE(is_forbidden(error_of(
      [&] { client.create(kConfigMaps, "ns", Object{{"metadata", {{"name", "c"}}}}); })));
}

TEST_F(MemoryClientTest, FailureHookDecidesPerRequest) {
  client.set_failure_hook([](const Request& r) -> std::optional<ApiError> {
    if (r.verb == Verb::Create && r.name == "bad") return ApiError(409, "Conflict", "no");
    return std::nullopt;
  });
  EXPECT_NO_THROW(client.create(kPods, "ns", pod("good")));
  EXPECT_TRUE(is_conflict(error_of([&] { client.create(kPods, "ns", pod("bad")); })));
}

}  // namespace
}  // namespace kube
