// Deletion in MemoryClient, after the API server and its garbage collector:
// - preconditions (uid, resourceVersion) -> 409 Conflict;
// - an object with finalizers is only marked (deletionTimestamp) and goes away once an update
//   empties its finalizers (store_update_locked);
// - propagation: Background deletes dependents (objects whose ownerReferences name the uid)
//   once the owner is gone, recursively; Foreground deletes them before the owner; Orphan
//   strips the owner reference. A dependent with another owner still present only loses the
//   reference. Default: Background, except batch/v1 Jobs, which the API orphans by default.
#include <algorithm>
#include <set>

#include "kube/api_error.h"
#include "kube/memory_client.h"
#include "kube/object_meta.h"

namespace kube {

namespace {

std::string default_policy(const Resource& r) {
  return r.group == "batch" && r.resource == "jobs" ? "Orphan" : "Background";
}

}  // namespace

void MemoryClient::remove(const Resource& r, const std::string& ns, const std::string& name,
                          const DeleteOptions& opts) {
  before_request({Verb::Delete, r, ns, name});
  const std::string sns = scope_ns(r, ns, nullptr);
  const std::string& policy = opts.propagation_policy;
  if (!policy.empty() && policy != "Background" && policy != "Foreground" && policy != "Orphan")
    throw ApiError(422, "Invalid", "propagationPolicy: Unsupported value: \"" + policy + "\"");
  MutexLock lock(mu_);
  const Object* cur = find_locked(r, sns, name);
  if (!cur) throw not_found_error(r.resource, name);
  if (opts.precondition_uid && *opts.precondition_uid != uid_of(*cur))
    throw conflict_error(r.resource, name,
                         "Precondition failed: UID in precondition: " + *opts.precondition_uid +
                             ", UID in object meta: " + uid_of(*cur));
  if (opts.precondition_resource_version &&
      *opts.precondition_resource_version != resource_version_of(*cur))
    throw conflict_error(r.resource, name,
                         "Precondition failed: ResourceVersion in precondition: " +
                             *opts.precondition_resource_version +
                             ", ResourceVersion in object meta: " + resource_version_of(*cur));
  delete_locked(r, sns, name, policy.empty() ? default_policy(r) : policy);
}

void MemoryClient::delete_locked(const Resource& r, const std::string& ns,
                                 const std::string& name, const std::string& policy) {
  const Object* cur = find_locked(r, ns, name);
  if (!cur || has_deletion_timestamp(*cur)) return;  // gone, or already being deleted
  const std::string uid = uid_of(*cur);
  if (policy == "Orphan") orphan_dependents_locked(uid);
  if (policy == "Foreground") cascade_locked(uid, policy);
  cur = find_locked(r, ns, name);  // an ownership cycle may have deleted it already
  if (!cur) return;
  if (!cur->at("metadata").value("finalizers", Object::array()).empty()) {
    Object old = *cur;
    Object marked = old;
    marked["metadata"]["deletionTimestamp"] = format_time(clock_.now());
    marked["metadata"]["deletionGracePeriodSeconds"] = 0;
    const int64_t rv = next_rv_locked();
    marked["metadata"]["resourceVersion"] = std::to_string(rv);
    bucket_locked(r)[object_key(ns, name)] = marked;
    hub_.record({rv, r.group + "/" + r.resource, WatchEvent::Type::Modified, old, marked});
    return;
  }
  erase_locked(r, object_key(ns, name));
}

void MemoryClient::erase_locked(const Resource& r, const std::string& key) {
  Bucket& b = bucket_locked(r);
  auto it = b.find(key);
  if (it == b.end()) return;
  Object obj = std::move(it->second);
  b.erase(it);
  const int64_t rv = next_rv_locked();
  obj["metadata"]["resourceVersion"] = std::to_string(rv);
  hub_.record({rv, r.group + "/" + r.resource, WatchEvent::Type::Deleted, Object(), obj});
  cascade_locked(uid_of(obj), "Background");
}

namespace {

struct Dependent {
  Resource resource;
  std::string ns, name;
  std::vector<std::string> owners;
};

}  // namespace

void MemoryClient::cascade_locked(const std::string& owner_uid, const std::string& policy) {
  if (owner_uid.empty()) return;
  std::vector<Dependent> dependents;
  std::set<std::string> live_uids;
  for (const auto& [rkey, bucket] : objects_) {
    for (const auto& [key, o] : bucket) {
      live_uids.insert(uid_of(o));
      std::vector<std::string> owners = owner_uids(o);
      if (std::find(owners.begin(), owners.end(), owner_uid) != owners.end())
        dependents.push_back({resources_seen_.at(rkey), namespace_of(o), name_of(o), owners});
    }
  }
  for (const auto& d : dependents) {
    const bool other_owner_alive =
        std::any_of(d.owners.begin(), d.owners.end(), [&](const std::string& u) {
          return u != owner_uid && live_uids.count(u) > 0;
        });
    if (other_owner_alive) {
      orphan_dependents_locked(owner_uid);
      continue;
    }
    delete_locked(d.resource, d.ns, d.name, policy);
  }
}

void MemoryClient::orphan_dependents_locked(const std::string& owner_uid) {
  for (auto& [rkey, bucket] : objects_) {
    for (auto& [key, o] : bucket) {
      auto found = o["metadata"].find("ownerReferences");
      if (found == o["metadata"].end() || !found->is_array()) continue;
      Object& refs = *found;
      Object kept = Object::array();
      for (const auto& ref : refs)
        if (ref.value("uid", "") != owner_uid) kept.push_back(ref);
      if (kept.size() == refs.size()) continue;
      const Object old = o;
      if (kept.empty()) o["metadata"].erase("ownerReferences");
      else refs = kept;
      const int64_t rv = next_rv_locked();
      o["metadata"]["resourceVersion"] = std::to_string(rv);
      hub_.record({rv, rkey, WatchEvent::Type::Modified, old, o});
    }
  }
}

}  // namespace kube
