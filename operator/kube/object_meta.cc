#include "kube/object_meta.h"

namespace kube {

namespace {

std::string meta_string(const Object& obj, const char* field) {
  if (!obj.is_object()) return "";
  auto m = obj.find("metadata");
  if (m == obj.end() || !m->is_object()) return "";
  auto f = m->find(field);
  return f != m->end() && f->is_string() ? f->get<std::string>() : "";
}

const Object& owner_refs(const Object& obj) {
  static const Object kNone = Object::array();  // a constant, not state
  if (!obj.is_object()) return kNone;
  auto m = obj.find("metadata");
  if (m == obj.end() || !m->is_object()) return kNone;
  auto refs = m->find("ownerReferences");
  return refs != m->end() && refs->is_array() ? *refs : kNone;
}

}  // namespace

std::string name_of(const Object& obj) { return meta_string(obj, "name"); }
std::string namespace_of(const Object& obj) { return meta_string(obj, "namespace"); }
std::string uid_of(const Object& obj) { return meta_string(obj, "uid"); }
std::string resource_version_of(const Object& obj) { return meta_string(obj, "resourceVersion"); }

const Object& labels_of(const Object& obj) {
  static const Object kNull;  // a constant, not state
  if (!obj.is_object()) return kNull;
  auto m = obj.find("metadata");
  if (m == obj.end() || !m->is_object()) return kNull;
  auto l = m->find("labels");
  return l != m->end() ? *l : kNull;
}

std::string object_key(const std::string& ns, const std::string& name) {
  return ns.empty() ? name : ns + "/" + name;
}

std::string object_key(const Object& obj) { return object_key(namespace_of(obj), name_of(obj)); }

std::pair<std::string, std::string> split_key(const std::string& key) {
  const size_t slash = key.find('/');
  if (slash == std::string::npos) return {"", key};
  return {key.substr(0, slash), key.substr(slash + 1)};
}

std::vector<std::string> owner_uids(const Object& obj) {
  std::vector<std::string> out;
  for (const auto& ref : owner_refs(obj))
    if (ref.is_object() && ref.contains("uid") && ref["uid"].is_string())
      out.push_back(ref["uid"].get<std::string>());
  return out;
}

std::string controller_uid(const Object& obj) {
  for (const auto& ref : owner_refs(obj))
    if (ref.is_object() && ref.value("controller", false) && ref.contains("uid") &&
        ref["uid"].is_string())
      return ref["uid"].get<std::string>();
  return "";
}

bool has_deletion_timestamp(const Object& obj) {
  return !meta_string(obj, "deletionTimestamp").empty();
}

void complete_type_meta(Object& obj, const Resource& r) {
  if (!obj.is_object()) return;
  if (!obj.contains("kind") && !r.kind.empty()) obj["kind"] = r.kind;
  if (!obj.contains("apiVersion")) obj["apiVersion"] = r.api_version();
}

}  // namespace kube
