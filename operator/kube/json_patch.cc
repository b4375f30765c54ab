#include "kube/json_patch.h"

#include "kube/api_error.h"

namespace kube {

Object apply_patch(const Object& target, PatchType type, const std::string& body) {
  Object patch;
  try {
    patch = Object::parse(body);
  } catch (const nlohmann::json::exception& e) {
    throw bad_request_error(std::string("patch body is not valid JSON: ") + e.what());
  }
  if (type == PatchType::JsonPatch) {
    if (!patch.is_array()) throw bad_request_error("a JSON patch must be an array of operations");
    try {
      return target.patch(patch);
    } catch (const nlohmann::json::out_of_range& e) {
      throw ApiError(422, "Invalid", std::string("JSON patch failed: ") + e.what());
    } catch (const nlohmann::json::other_error& e) {  // a failed "test"
      throw ApiError(422, "Invalid", std::string("JSON patch failed: ") + e.what());
    } catch (const nlohmann::json::exception& e) {
      throw bad_request_error(std::string("invalid JSON patch: ") + e.what());
    }
  }
  if (!patch.is_object()) throw bad_request_error("a merge patch must be a JSON object");
  Object result = target;
  result.merge_patch(patch);
  return result;
}

}  // namespace kube
