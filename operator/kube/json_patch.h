// Applying PATCH bodies to JSON objects, as the API server does: Merge (RFC 7386),
// StrategicMerge (treated as a merge patch: list-merge keys are not modelled), JsonPatch
// (RFC 6902) and Apply (treated as a merge patch of the applied configuration).
#pragma once

#include <string>

#include "kube/client.h"

namespace kube {

// Returns target with `body` applied. Throws ApiError 400 when the body is not valid JSON of
// the right shape, 422 when a JSON Patch operation fails (a failed test, a missing path).
Object apply_patch(const Object& target, PatchType type, const std::string& body);

}  // namespace kube
