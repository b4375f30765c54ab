// Building ApiErrors (the class itself is declared in client.h): from a Kubernetes Status
// object, from a status code, and back to a Status object (the in-memory API and the HTTP
// server answer with one).
#pragma once

#include <string>

#include "kube/client.h"

namespace kube {

// Parses a metav1.Status body. Missing reason/message are filled from the HTTP code;
// details.retryAfterSeconds becomes retry_after, details.causes[].field becomes fields.
ApiError from_status(int http_code, const Object& status);

// The reason Kubernetes uses for an HTTP code with no more specific reason ("NotFound", ...).
std::string reason_for_code(int http_code);

// A metav1.Status object describing `e` (kind Status, status Failure, code, reason, message).
Object to_status(const ApiError& e);

// Whether sending the same request again can succeed without anyone changing the object (the
// split controller-runtime makes with reconcile.TerminalError). Permanent: the API server
// judged the request itself and refused it -- 400 BadRequest, 403 Forbidden (RBAC, admission
// policy, LimitRange; not "exceeded quota"), 405, 406, 413 RequestEntityTooLarge, 415,
// 422 Invalid. Everything else is retryable, including any code not named here; see
// api_error.cc for why 404, 409 and 403 quota are.
bool is_permanent(const ApiError& e);

// "Invalid (HTTP 422)", plus " on spec.x, spec.y" when the Status named the rejected fields.
std::string describe_reason(const ApiError& e);

// Shorthands for the errors the API server returns, with Kubernetes' message wording.
ApiError not_found_error(const std::string& resource, const std::string& name);
ApiError already_exists_error(const std::string& resource, const std::string& name);
ApiError conflict_error(const std::string& resource, const std::string& name,
                        const std::string& why);
ApiError invalid_error(const std::string& kind, const std::string& name, const std::string& why);
ApiError gone_error(const std::string& message);
ApiError bad_request_error(const std::string& message);

}  // namespace kube
