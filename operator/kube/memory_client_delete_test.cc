#include <gtest/gtest.h>

#include "kube/api_error.h"
#include "kube/fake_clock.h"
#include "kube/memory_client.h"
#include "kube/object_meta.h"

namespace kube {
namespace {

using resources::kConfigMaps;
using resources::kJobs;
using resources::kPods;

Object named(const std::string& name) { return {{"metadata", {{"name", name}}}}; }

Object owned_by(const std::string& name, const Object& owner) {
  Object o = named(name);
  o["metadata"]["ownerReferences"] = Object::array(
      {{{"apiVersion", owner["apiVersion"]}, {"kind", owner["kind"]}, {"name", name_of(owner)},
        {"uid", uid_of(owner)}, {"controller", true}}});
  return o;
}

bool exists(MemoryClient& c, const Resource& r, const std::string& name) {
  try {
    c.get(r, "ns", name);
    return true;
  } catch (const ApiError& e) {
    if (is_not_found(e)) return false;
    throw;
  }
}

DeleteOptions policy(const std::string& p) {
  DeleteOptions o;
  o.propagation_policy = p;
  return o;
}

class MemoryDeleteTest : public ::testing::Test {
 protected:
  FakeClock clock;
  MemoryClient client{clock};
};

TEST_F(MemoryDeleteTest, DeleteRemovesObject) {
  client.create(kPods, "ns", named("p"));
  client.remove(kPods, "ns", "p", {});
  EXPECT_FALSE(exists(client, kPods, "p"));
  try {
    client.remove(kPods, "ns", "p", {});
    FAIL() << "second delete should be NotFound";
  } catch (const ApiError& e) {
    EXPECT_TRUE(is_not_found(e));
  }
}

TEST_F(MemoryDeleteTest, PreconditionsMustMatch) {
  const auto o = client.create(kPods, "ns", named("p"));
  DeleteOptions wrong_uid;
  wrong_uid.precondition_uid = "nope";
  EXPECT_THROW(client.remove(kPods, "ns", "p", wrong_uid), ApiError);
  DeleteOptions wrong_rv;
  wrong_rv.precondition_resource_version = "999";
  EXPECT_THROW(client.remove(kPods, "ns", "p", wrong_rv), ApiError);
  EXPECT_TRUE(exists(client, kPods, "p"));
  DeleteOptions right;
  right.precondition_uid = uid_of(o);
  right.precondition_resource_version = resource_version_of(o);
  client.remove(kPods, "ns", "p", right);
  EXPECT_FALSE(exists(client, kPods, "p"));
}

TEST_F(MemoryDeleteTest, FinalizersOnlyMarkUntilEmptied) {
  Object o = named("p");
  o["metadata"]["finalizers"] = {"example.com/cleanup"};
  client.create(kPods, "ns", o);
  client.remove(kPods, "ns", "p", {});
  Object marked = client.get(kPods, "ns", "p");
  EXPECT_EQ(marked["metadata"]["deletionTimestamp"], "2026-01-01T00:00:00Z");
  client.remove(kPods, "ns", "p", {});  // deleting again is a no-op
  marked["metadata"]["finalizers"] = Object::array();
  client.update(kPods, "ns", marked);
  EXPECT_FALSE(exists(client, kPods, "p"));
}

TEST_F(MemoryDeleteTest, BackgroundCascadeDeletesDependentsRecursively) {
  const auto owner = client.create(kConfigMaps, "ns", named("owner"));
  const auto child = client.create(kPods, "ns", owned_by("child", owner));
  client.create(kConfigMaps, "ns", owned_by("grandchild", child));
  client.create(kPods, "ns", named("unrelated"));
  client.remove(kConfigMaps, "ns", "owner", policy("Background"));
  EXPECT_FALSE(exists(client, kPods, "child"));
  EXPECT_FALSE(exists(client, kConfigMaps, "grandchild"));
  EXPECT_TRUE(exists(client, kPods, "unrelated"));
}

TEST_F(MemoryDeleteTest, ForegroundCascadeDeletesDependents) {
  const auto owner = client.create(kConfigMaps, "ns", named("owner"));
  client.create(kPods, "ns", owned_by("child", owner));
  client.remove(kConfigMaps, "ns", "owner", policy("Foreground"));
  EXPECT_FALSE(exists(client, kPods, "child"));
  EXPECT_FALSE(exists(client, kConfigMaps, "owner"));
}

TEST_F(MemoryDeleteTest, OrphanStripsOwnerReferences) {
  const auto owner = client.create(kConfigMaps, "ns", named("owner"));
  client.create(kPods, "ns", owned_by("child", owner));
  client.remove(kConfigMaps, "ns", "owner", policy("Orphan"));
  const auto child = client.get(kPods, "ns", "child");
  EXPECT_FALSE(child["metadata"].contains("ownerReferences"));
}

TEST_F(MemoryDeleteTest, JobsOrphanByDefaultLikeTheApiServer) {
  const auto job = client.create(kJobs, "ns", named("launcher"));
  client.create(kPods, "ns", owned_by("launcher-pod", job));
  client.remove(kJobs, "ns", "launcher", {});
  EXPECT_TRUE(exists(client, kPods, "launcher-pod"));
}

TEST_F(MemoryDeleteTest, DependentWithAnotherLiveOwnerOnlyLosesTheReference) {
  const auto a = client.create(kConfigMaps, "ns", named("a"));
  const auto b = client.create(kConfigMaps, "ns", named("b"));
  Object child = owned_by("child", a);
  child["metadata"]["ownerReferences"].push_back(owned_by("x", b)["metadata"]["ownerReferences"][0]);
  client.create(kPods, "ns", child);
  client.remove(kConfigMaps, "ns", "a", {});
  const auto left = client.get(kPods, "ns", "child");
  ASSERT_EQ(left["metadata"]["ownerReferences"].size(), 1u);
  EXPECT_EQ(left["metadata"]["ownerReferences"][0]["uid"], uid_of(b));
}

TEST_F(MemoryDeleteTest, OwnerWithFinalizerCascadesWhenFinallyRemoved) {
  Object o = named("owner");
  o["metadata"]["finalizers"] = {"f"};
  auto owner = client.create(kConfigMaps, "ns", o);
  client.create(kPods, "ns", owned_by("child", owner));
  client.remove(kConfigMaps, "ns", "owner", {});
  EXPECT_TRUE(exists(client, kPods, "child"));  // owner only marked
  owner = client.get(kConfigMaps, "ns", "owner");
  owner["metadata"].erase("finalizers");
  client.update(kConfigMaps, "ns", owner);
  EXPECT_FALSE(exists(client, kPods, "child"));
}

TEST_F(MemoryDeleteTest, UnknownPropagationPolicyIsInvalid) {
  client.create(kPods, "ns", named("p"));
  EXPECT_THROW(client.remove(kPods, "ns", "p", policy("Sometimes")), ApiError);
}

}  // namespace
}  // namespace kube
