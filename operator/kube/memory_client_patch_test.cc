#include <gtest/gtest.h>

#include "kube/api_error.h"
#include "kube/fake_clock.h"
#include "kube/json_patch.h"
#include "kube/memory_client.h"
#include "kube/object_meta.h"

namespace kube {
namespace {

using resources::kConfigMaps;

Object cm(const std::string& name) {
  return {{"metadata", {{"name", name}}}, {"data", {{"a", "1"}, {"b", "2"}}}};
}

template <typename F>
int error_code(F&& f) {
  try {
    f();
  } catch (const ApiError& e) {
    return e.code();
  }
  return 0;
}

TEST(JsonPatch, MergePatchFollowsRfc7386) {
  const Object target = Object::parse(R"({"a":"b","c":{"d":"e","f":"g"}})");
  const Object out = apply_patch(target, PatchType::Merge, R"({"a":"z","c":{"f":null}})");
  EXPECT_EQ(out, Object::parse(R"({"a":"z","c":{"d":"e"}})"));
}

TEST(JsonPatch, JsonPatchSupportsAllOperations) {
  const Object target = Object::parse(R"({"a":1,"list":[1,2],"o":{"x":"y"}})");
  const Object out = apply_patch(target, PatchType::JsonPatch, R"([
    {"op":"test","path":"/a","value":1},
    {"op":"add","path":"/list/-","value":3},
    {"op":"replace","path":"/a","value":2},
    {"op":"copy","from":"/o","path":"/o2"},
    {"op":"move","from":"/o/x","path":"/moved"},
    {"op":"remove","path":"/list/0"}])");
  EXPECT_EQ(out, Object::parse(R"({"a":2,"list":[2,3],"o":{},"o2":{"x":"y"},"moved":"y"})"));
}

TEST(JsonPatch, FailedTestIsInvalidAndMalformedBodyIsBadRequest) {
  const Object target = Object::parse(R"({"a":1})");
  EXPECT_EQ(error_code([&] {
              apply_patch(target, PatchType::JsonPatch, R"([{"op":"test","path":"/a","value":2}])");
            }),
            422);
  EXPECT_EQ(error_code([&] {
              apply_patch(target, PatchType::JsonPatch, R"([{"op":"remove","path":"/nope"}])");
            }),
            422);
  EXPECT_EQ(error_code([&] { apply_patch(target, PatchType::Merge, "{not json"); }), 400);
  EXPECT_EQ(error_code([&] { apply_patch(target, PatchType::JsonPatch, R"({"op":"x"})"); }), 400);
}

class MemoryPatchTest : public ::testing::Test {
 protected:
  FakeClock clock;
  MemoryClient client{clock};
};

TEST_F(MemoryPatchTest, MergePatchChangesStoredObject) {
  client.create(kConfigMaps, "ns", cm("c"));
  const auto out = client.patch(kConfigMaps, "ns", "c", PatchType::Merge,
                                R"({"data":{"a":null,"c":"3"}})", {});
  EXPECT_EQ(out["data"], Object::parse(R"({"b":"2","c":"3"})"));
  EXPECT_EQ(client.get(kConfigMaps, "ns", "c")["data"], out["data"]);
}

TEST_F(MemoryPatchTest, StrategicMergeActsAsMergePatch) {
  client.create(kConfigMaps, "ns", cm("c"));
  const auto out = client.patch(kConfigMaps, "ns", "c", PatchType::StrategicMerge,
                                R"({"data":{"a":"9"}})", {});
  EXPECT_EQ(out["data"]["a"], "9");
  EXPECT_EQ(out["data"]["b"], "2");
}

TEST_F(MemoryPatchTest, JsonPatchOnStoredObject) {
  client.create(kConfigMaps, "ns", cm("c"));
  const auto out = client.patch(kConfigMaps, "ns", "c", PatchType::JsonPatch,
                                R"([{"op":"replace","path":"/data/a","value":"x"}])", {});
  EXPECT_EQ(out["data"]["a"], "x");
}

TEST_F(MemoryPatchTest, PatchOfMissingObjectIsNotFound) {
  EXPECT_EQ(error_code([&] {
              client.patch(kConfigMaps, "ns", "c", PatchType::Merge, "{}", {});
            }),
            404);
}

TEST_F(MemoryPatchTest, PatchCarryingStaleResourceVersionConflicts) {
  const auto o = client.create(kConfigMaps, "ns", cm("c"));
  client.patch(kConfigMaps, "ns", "c", PatchType::Merge, R"({"data":{"a":"2"}})", {});
  const std::string body = R"({"metadata":{"resourceVersion":")" + resource_version_of(o) +
                           R"("},"data":{"a":"3"}})";
  EXPECT_EQ(error_code([&] { client.patch(kConfigMaps, "ns", "c", PatchType::Merge, body, {}); }),
            409);
}

TEST_F(MemoryPatchTest, StatusPatchTouchesOnlyStatus) {
  client.create(kConfigMaps, "ns", cm("c"));
  PatchOptions status;
  status.status = true;
  auto out = client.patch(kConfigMaps, "ns", "c", PatchType::Merge,
                          R"({"status":{"ok":true},"data":{"a":"x"}})", status);
  EXPECT_EQ(out["status"]["ok"], true);
  EXPECT_EQ(out["data"]["a"], "1");
  out = client.patch(kConfigMaps, "ns", "c", PatchType::Merge, R"({"status":{"ok":false}})", {});
  EXPECT_EQ(out["status"]["ok"], true);  // main resource patch leaves status alone
}

TEST_F(MemoryPatchTest, ApplyCreatesThenMergesAndRecordsManager) {
  PatchOptions apply;
  apply.field_manager = "korovod";
  const auto created = client.patch(kConfigMaps, "ns", "c", PatchType::Apply,
                                    R"({"metadata":{"name":"c"},"data":{"a":"1"}})", apply);
  EXPECT_EQ(created["data"]["a"], "1");
  ASSERT_TRUE(created["metadata"]["managedFields"].is_array());
  EXPECT_EQ(created["metadata"]["managedFields"][0]["manager"], "korovod");
  EXPECT_EQ(created["metadata"]["managedFields"][0]["operation"], "Apply");
  const auto merged = client.patch(kConfigMaps, "ns", "c", PatchType::Apply,
                                   R"({"data":{"b":"2"}})", apply);
  EXPECT_EQ(merged["data"], Object::parse(R"({"a":"1","b":"2"})"));
  EXPECT_EQ(merged["metadata"]["managedFields"].size(), 1u);
  const auto again = client.patch(kConfigMaps, "ns", "c", PatchType::Apply,
                                  R"({"data":{"b":"2"}})", apply);
  EXPECT_EQ(resource_version_of(again), resource_version_of(merged));  // no-op apply
}

TEST_F(MemoryPatchTest, ApplyNeedsFieldManagerAndMatchingName) {
  EXPECT_EQ(error_code([&] { client.patch(kConfigMaps, "ns", "c", PatchType::Apply, "{}", {}); }),
            422);
  PatchOptions apply;
  apply.field_manager = "m";
  EXPECT_EQ(error_code([&] {
              client.patch(kConfigMaps, "ns", "c", PatchType::Apply,
                           R"({"metadata":{"name":"other"}})", apply);
            }),
            400);
}

}  // namespace
}  // namespace kube
