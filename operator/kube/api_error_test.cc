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

TEST(ApiError, StatusRoundTrips) {
  ApiError e = conflict_error("pods", "p", "the object has been modified");
  e.retry_after = std::chrono::seconds(3);
  const ApiError back = from_status(0, to_status(e));
  EXPECT_EQ(back.code(), 409);
  EXPECT_EQ(back.reason(), "Conflict");
  EXPECT_EQ(back.api_message(), e.api_message());
  EXPECT_EQ(back.retry_after, e.retry_after);
  EXPECT_NE(std::string(e.what()).find("409"), std::string::npos);
}

}  // namespace
}  // namespace kube
