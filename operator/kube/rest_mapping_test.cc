#include <gtest/gtest.h>

#include "kube/rest_client.h"

namespace kube::rest {
namespace {

const Resource kPod{"", "v1", "pods", "Pod", true};
const Resource kMPIJob{"kubeflow.org", "v2beta1", "mpijobs", "MPIJob", true};
const Resource kCRD{"apiextensions.k8s.io", "v1", "customresourcedefinitions",
                    "CustomResourceDefinition", false};

TEST(ResourcePathTest, CoreAndGroupNamespacedAndClusterScoped) {
  EXPECT_EQ(resource_path(kPod, "ns"), "/api/v1/namespaces/ns/pods");
  EXPECT_EQ(resource_path(kPod, ""), "/api/v1/pods");
  EXPECT_EQ(resource_path(kPod, "ns", "p", "status"), "/api/v1/namespaces/ns/pods/p/status");
  EXPECT_EQ(resource_path(kMPIJob, "a", "j"), "/apis/kubeflow.org/v2beta1/namespaces/a/mpijobs/j");
  EXPECT_EQ(resource_path(kCRD, "ignored", "x.y"),
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/x.y");
}

TEST(ListQueryTest, EncodesSelectorsAndPagesListsOnly) {
  ListOptions o;
  o.label_selector = "app in (a,b),!x";
  o.field_selector = "metadata.name=n";
  o.limit = 50;
  o.continue_token = "tok/=";
  o.resource_version = "12";
  EXPECT_EQ(list_query(o, false),
            "?labelSelector=app%20in%20%28a%2Cb%29%2C%21x&fieldSelector=metadata.name%3Dn"
            "&resourceVersion=12&limit=50&continue=tok%2F%3D");
  o.timeout_seconds = 30;
  EXPECT_EQ(list_query(o, true),
            "?watch=true&labelSelector=app%20in%20%28a%2Cb%29%2C%21x"
            "&fieldSelector=metadata.name%3Dn&resourceVersion=12&allowWatchBookmarks=true"
            "&timeoutSeconds=30");
  EXPECT_EQ(list_query(ListOptions{}, false), "");
}

TEST(ParseWatchEventTest, TypesAndObject) {
  const auto e = parse_watch_event(R"({"type":"MODIFIED","object":{"kind":"Pod"}})");
  EXPECT_EQ(e.type, WatchEvent::Type::Modified);
  EXPECT_EQ(e.object["kind"], "Pod");
  EXPECT_EQ(parse_watch_event(R"({"type":"BOOKMARK","object":{}})").type,
            WatchEvent::Type::Bookmark);
  EXPECT_EQ(parse_watch_event(R"({"type":"ERROR","object":{"code":410}})").type,
            WatchEvent::Type::Error);
  EXPECT_THROW(parse_watch_event("{not json"), ApiError);
  EXPECT_THROW(parse_watch_event(R"({"type":"WHAT","object":{}})"), ApiError);
}

TEST(PatchContentTypeTest, OnePerPatchType) {
  EXPECT_EQ(patch_content_type(PatchType::Merge), "application/merge-patch+json");
  EXPECT_EQ(patch_content_type(PatchType::JsonPatch), "application/json-patch+json");
  EXPECT_EQ(patch_content_type(PatchType::StrategicMerge),
            "application/strategic-merge-patch+json");
  EXPECT_EQ(patch_content_type(PatchType::Apply), "application/apply-patch+yaml");
}

TEST(RetryDelayTest, ExponentialCappedAndRetryAfterWins) {
  RestClientOptions o;
  o.initial_backoff = std::chrono::milliseconds(100);
  o.max_backoff = std::chrono::milliseconds(1000);
  EXPECT_EQ(retry_delay(1, std::nullopt, o).count(), 100);
  EXPECT_EQ(retry_delay(3, std::nullopt, o).count(), 400);
  EXPECT_EQ(retry_delay(10, std::nullopt, o).count(), 1000);
  o.max_backoff = std::chrono::milliseconds(5000);
  EXPECT_EQ(retry_delay(1, std::chrono::seconds(2), o).count(), 2000);
}

TEST(ErrorFromResponseTest, StatusBodyOrPlainText) {
  const ApiError conflict = error_from_response(
      409, R"({"kind":"Status","status":"Failure","reason":"Conflict","code":409,
               "message":"the object has been modified"})");
  EXPECT_TRUE(is_conflict(conflict));
  EXPECT_EQ(conflict.api_message(), "the object has been modified");
  const ApiError text = error_from_response(503, "overloaded\n");
  EXPECT_EQ(text.code(), 503);
  EXPECT_EQ(text.api_message(), "overloaded");
  EXPECT_EQ(error_from_response(401, "").code(), 401);
}

}  // namespace
}  // namespace kube::rest
