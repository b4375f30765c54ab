#include "controller/owner_mapping.h"

#include "kube/object_meta.h"
#include "mpijob/types.h"

namespace controller {
namespace {

const kube::Object* controller_ref(const kube::Object& obj) {
  auto md = obj.find("metadata");
  if (md == obj.end()) return nullptr;
  auto refs = md->find("ownerReferences");
  if (refs == md->end() || !refs->is_array()) return nullptr;
  for (const auto& r : *refs) {
    if (r.value("controller", false)) return &r;
  }
  return nullptr;
}

}  // namespace

std::optional<std::string> owning_mpijob_key(const kube::Object& obj, const JobLookup& jobs) {
  const kube::Object* ref = controller_ref(obj);
  if (!ref) return std::nullopt;
  const std::string ns = kube::namespace_of(obj);
  const std::string api = ref->value("apiVersion", ""), kind = ref->value("kind", "");
  if (kind == "Job" && api == "batch/v1" && jobs) {
    auto job = jobs(ns, ref->value("name", ""));
    if (!job || kube::uid_of(*job) != ref->value("uid", "")) return std::nullopt;
    return owning_mpijob_key(*job, nullptr);
  }
  if (kind != mpijob::kKind || api != mpijob::kApiVersion) return std::nullopt;
  return kube::object_key(ns, ref->value("name", ""));
}

}  // namespace controller
