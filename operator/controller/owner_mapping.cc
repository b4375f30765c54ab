#include "controller/owner_mapping.h"

#include "kube/object_meta.h"
#include "mpijob/types.h"

namespace controller {

std::optional<std::string> owning_mpijob_key(const kube::ObjectEvent& obj, const JobLookup& jobs) {
  const std::optional<kube::OwnerRef> ref = obj.controller();
  if (!ref) return std::nullopt;
  const std::string ns(obj.ns()), name(ref->name);
  if (ref->kind == "Job" && ref->api_version == "batch/v1" && jobs) {
    auto job = jobs(ns, name);
    if (!job || kube::uid_of(*job) != ref->uid) return std::nullopt;
    return owning_mpijob_key(*job, nullptr);
  }
  if (ref->kind != mpijob::kKind || ref->api_version != mpijob::kApiVersion) return std::nullopt;
  return kube::object_key(ns, name);
}

std::optional<std::string> owning_mpijob_key(const kube::Object& obj, const JobLookup& jobs) {
  return owning_mpijob_key(kube::ObjectEvent(obj), jobs);
}

}  // namespace controller
