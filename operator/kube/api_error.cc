#include "kube/api_error.h"

namespace kube {

ApiError::ApiError(int code, std::string reason, std::string message)
    : std::runtime_error("kubernetes API error " + std::to_string(code) + " " + reason + ": " +
                         message),
      code_(code), reason_(std::move(reason)), message_(std::move(message)) {}

bool is_not_found(const ApiError& e) { return e.code() == 404; }
bool is_conflict(const ApiError& e) { return e.code() == 409 && e.reason() != "AlreadyExists"; }
bool is_already_exists(const ApiError& e) {
  return e.code() == 409 && e.reason() == "AlreadyExists";
}
bool is_gone(const ApiError& e) { return e.code() == 410 || e.reason() == "Expired"; }
bool is_forbidden(const ApiError& e) { return e.code() == 403; }
bool is_unauthorized(const ApiError& e) { return e.code() == 401; }
bool is_invalid(const ApiError& e) { return e.code() == 422; }

bool is_permanent(const ApiError& e) {
  switch (e.code()) {
    case 400:  // BadRequest: malformed request; the same bytes are refused again
    case 405:  // MethodNotAllowed
    case 406:  // NotAcceptable
    case 413:  // RequestEntityTooLarge: e.g. a ConfigMap over 1 MiB for a huge hostfile
    case 415:  // UnsupportedMediaType
    case 422:  // Invalid: the object fails the API server's validation
      return true;
    case 403:
      // RBAC, PodSecurity / webhook admission and LimitRange refusals stay until someone
      // changes the object or the cluster. A ResourceQuota refusal ("exceeded quota", or the
      // quota's usage not computed yet) clears by itself when other pods in the namespace
      // finish -- and their deletion does not enqueue this object, so only a retry notices.
      // The ServiceAccount admission plugin refuses pods ("error looking up service account
      // ns/default: serviceaccount \"default\" not found") until the service-account
      // controller has made the account, a moment after the namespace: a job applied right
      // after `kubectl create namespace` meets it.
      return e.api_message().find("exceeded quota") == std::string::npos &&
             e.api_message().find("status unknown for quota") == std::string::npos &&
             e.api_message().find("error looking up service account") == std::string::npos;
    default:
      // Retryable, deliberately:
      //  0 (no answer: connection, TLS, timeout), 408, 429, 5xx: the server or the path to it.
      //  401: credentials rotate (a projected token is refreshed on disk).
      //  404 NotFound: a controller reads from a cache that lags the API server; a write to an
      //    object that just went away (or whose namespace or owner did) is answered by the
      //    next sync, which sees the truth -- usually "nothing to do". Dropping the key instead
      //    would lose the work when the cache was behind in the other direction.
      //  409 Conflict / AlreadyExists: a stale resourceVersion or a cache that has not seen
      //    our own create yet; the next sync reads the newer object.
      //  410 Gone: an expired resourceVersion; relisting fixes it.
      //  Any other code: unknown, so retried -- a failure is never silently dropped.
      return false;
  }
}

std::string describe_reason(const ApiError& e) {
  std::string s = e.reason() + " (HTTP " + std::to_string(e.code()) + ")";
  for (size_t i = 0; i < e.fields.size(); ++i) s += (i == 0 ? " on " : ", ") + e.fields[i];
  return s;
}

std::string reason_for_code(int http_code) {
  switch (http_code) {
    case 400: return "BadRequest";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "NotFound";
    case 405: return "MethodNotAllowed";
    case 406: return "NotAcceptable";
    case 409: return "Conflict";
    case 410: return "Expired";
    case 413: return "RequestEntityTooLarge";
    case 415: return "UnsupportedMediaType";
    case 422: return "Invalid";
    case 429: return "TooManyRequests";
    case 500: return "InternalError";
    case 503: return "ServiceUnavailable";
    case 504: return "Timeout";
    default: return http_code == 0 ? "ConnectionFailed" : "Unknown";
  }
}

ApiError from_status(int http_code, const Object& status) {
  int code = http_code;
  std::string reason, message;
  if (status.is_object()) {
    if (code == 0 && status.contains("code") && status["code"].is_number_integer())
      code = status["code"].get<int>();
    if (status.contains("reason") && status["reason"].is_string())
      reason = status["reason"].get<std::string>();
    if (status.contains("message") && status["message"].is_string())
      message = status["message"].get<std::string>();
  }
  if (reason.empty()) reason = reason_for_code(code);
  if (message.empty()) message = "the server responded with HTTP " + std::to_string(code);
  ApiError e(code, reason, message);
  const Object* details = status.is_object() && status.contains("details")
                              ? &status["details"] : nullptr;
  if (details && details->is_object() && details->contains("retryAfterSeconds") &&
      (*details)["retryAfterSeconds"].is_number_integer())
    e.retry_after = std::chrono::seconds((*details)["retryAfterSeconds"].get<int>());
  if (details && details->is_object() && details->contains("causes") &&
      (*details)["causes"].is_array()) {
    for (const auto& cause : (*details)["causes"]) {
      if (cause.is_object() && cause.contains("field") && cause["field"].is_string())
        e.fields.push_back(cause["field"].get<std::string>());
    }
  }
  return e;
}

Object to_status(const ApiError& e) {
  Object s = {{"kind", "Status"},      {"apiVersion", "v1"},     {"metadata", Object::object()},
              {"status", "Failure"},   {"message", e.api_message()},
              {"reason", e.reason()},  {"code", e.code()}};
  if (e.retry_after) s["details"]["retryAfterSeconds"] = e.retry_after->count();
  for (const auto& f : e.fields) {
    s["details"]["causes"].push_back({{"reason", "FieldValueInvalid"}, {"field", f}});
  }
  return s;
}

ApiError not_found_error(const std::string& resource, const std::string& name) {
  return ApiError(404, "NotFound", resource + " \"" + name + "\" not found");
}

ApiError already_exists_error(const std::string& resource, const std::string& name) {
  return ApiError(409, "AlreadyExists", resource + " \"" + name + "\" already exists");
}

ApiError conflict_error(const std::string& resource, const std::string& name,
                        const std::string& why) {
  return ApiError(409, "Conflict",
                  "Operation cannot be fulfilled on " + resource + " \"" + name + "\": " + why);
}

ApiError invalid_error(const std::string& kind, const std::string& name, const std::string& why) {
  return ApiError(422, "Invalid", kind + " \"" + name + "\" is invalid: " + why);
}

ApiError gone_error(const std::string& message) { return ApiError(410, "Expired", message); }

ApiError bad_request_error(const std::string& message) {
  return ApiError(400, "BadRequest", message);
}

}  // namespace kube
