#include "kube/api_error.h"

#include <gtest/gtest.h>

namespace kube {
namespace {

TEST(ApiError, ParsesKubernetesStatus) {
  const Object status = Object::parse(R"({"kind":"Status","apiVersion":"v1","status":"Failure",
    "message":"pods \"x\" already exists","reason":"AlreadyExists","code":409,
    "details":{"name":"x","kind":"pods"}})");
  const ApiError e = from_status(409, status);
  EXPECT_EQ(e.code(), 409);
  EXPECT_EQ(e.reason(), "AlreadyExists");
  EXPECT_EQ(e.api_message(), "pods \"x\" already exists");
  EXPECT_TRUE(is_already_exists(e));
  EXPECT_FALSE(is_conflict(e));
  EXPECT_FALSE(e.retry_after.has_value());
}

TEST(ApiError, FillsReasonFromCodeWhenBodyIsNotAStatus) {
  const ApiError e = from_status(404, Object("not json status"));
  EXPECT_EQ(e.reason(), "NotFound");
  EXPECT_TRUE(is_not_found(e));
  EXPECT_FALSE(e.api_message().empty());
}

TEST(ApiError, ReadsRetryAfterFromDetails) {
  const ApiError e = from_status(
      429, Object::parse(R"({"reason":"TooManyRequests","details":{"retryAfterSeconds":7}})"));
  ASSERT_TRUE(e.retry_after.has_value());
  EXPECT_EQ(*e.retry_after, std::chrono::seconds(7));
}

TEST(ApiError, UsesCodeFromBodyWhenNoResponseCode) {
  EXPECT_EQ(from_status(0, Object::parse(R"({"code":410,"reason":"Expired"})")).code(), 410);
}

TEST(ApiError, HelpersClassifyCodes) {
  EXPECT_TRUE(is_conflict(ApiError(409, "Conflict", "")));
  EXPECT_TRUE(is_gone(ApiError(410, "Expired", "")));
  EXPECT_TRUE(is_forbidden(ApiError(403, "Forbidden", "")));
  EXPECT_TRUE(is_unauthorized(ApiError(401, "Unauthorized", "")));
  EXPECT_TRUE(is_invalid(ApiError(422, "Invalid", "")));
  EXPECT_FALSE(is_not_found(ApiError(500, "InternalError", "")));
}

TEST(ApiError, ReadsRejectedFieldsFromCauses) {
  const ApiError e = from_status(422, Object::parse(R"({"kind":"Status","code":422,
    "reason":"Invalid","message":"Pod \"pi-worker-0\" is invalid: [...]",
    "details":{"name":"pi-worker-0",
    "kind":"pods","causes":[{"reason":"FieldValueRequired","message":"Required value",
    "field":"spec.containers[0].image"},{"reason":"FieldValueInvalid",
    "field":"metadata.labels"},{"reason":"NoField"}]}})"));
  EXPECT_EQ(e.fields, (std::vector<std::string>{"spec.containers[0].image", "metadata.labels"}));
  EXPECT_EQ(describe_reason(e), "Invalid (HTTP 422) on spec.containers[0].image, metadata.labels");
  EXPECT_EQ(describe_reason(ApiError(503, "ServiceUnavailable", "")),
            "ServiceUnavailable (HTTP 503)");
}

// The one table the controller's failure handling follows: a request the API server refused
// as such is permanent, anything that may pass unchanged later is retried.
TEST(ApiError, PermanentOnlyWhenTheServerRefusedTheRequestItself) {
  for (int code : {400, 403, 405, 406, 413, 415, 422}) {
    EXPECT_TRUE(is_permanent(ApiError(code, reason_for_code(code), "refused"))) << code;
  }
  for (int code : {0, 401, 404, 408, 409, 410, 429, 500, 502, 503, 504, 418, 499, 599}) {
    EXPECT_FALSE(is_permanent(ApiError(code, reason_for_code(code), "x"))) << code;
  }
  EXPECT_FALSE(is_permanent(already_exists_error("pods", "p")));
  EXPECT_FALSE(is_permanent(conflict_error("pods", "p", "the object has been modified")));
  EXPECT_TRUE(is_permanent(invalid_error("Pod", "p", "spec.containers: Required value")));
  EXPECT_TRUE(is_permanent(bad_request_error("the object must be a JSON object")));
  // A ResourceQuota refusal is a 403 that clears when other pods finish: retried.
  EXPECT_FALSE(is_permanent(ApiError(
      403, "Forbidden",
      "pods \"pi-worker-0\" is forbidden: exceeded quota: compute, requested: cpu=4, used: "
      "cpu=60, limited: cpu=64")));
  EXPECT_FALSE(is_permanent(ApiError(
      403, "Forbidden", "pods \"p\" is forbidden: status unknown for quota: compute, resource: cpu")));
  // The ServiceAccount admission refusal of a namespace made a moment ago: retried.
  EXPECT_FALSE(is_permanent(ApiError(
      403, "Forbidden",
      "pods \"pi-worker-0\" is forbidden: error looking up service account team-a/default: "
      "serviceaccount \"default\" not found")));
  // A service account the pod template names and nobody made is the same message; it stays
  // retryable (the user creates the account, which does not enqueue the MPIJob).
  EXPECT_TRUE(is_permanent(ApiError(
      403, "Forbidden",
      "pods \"p\" is forbidden: violates PodSecurity \"restricted:latest\": privileged")));
}

TEST(ApiError, StatusRoundTrips) {
  ApiError e = conflict_error("pods", "p", "the object has been modified");
  e.retry_after = std::chrono::seconds(3);
  e.fields = {"metadata.resourceVersion"};
  const ApiError back = from_status(0, to_status(e));
  EXPECT_EQ(back.fields, e.fields);
  EXPECT_EQ(back.code(), 409);
  EXPECT_EQ(back.reason(), "Conflict");
  EXPECT_EQ(back.api_message(), e.api_message());
  EXPECT_EQ(back.retry_after, e.retry_after);
  EXPECT_NE(std::string(e.what()).find("409"), std::string::npos);
}

}  // namespace
}  // namespace kube
