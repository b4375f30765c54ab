// Read helpers for metadata of objects kept as JSON. Missing fields read as "" / empty, so
// callers need not check shapes first.
#pragma once

#include <string>
#include <vector>

#include "kube/client.h"

namespace kube {

std::string name_of(const Object& obj);
std::string namespace_of(const Object& obj);
std::string uid_of(const Object& obj);
std::string resource_version_of(const Object& obj);
// metadata.labels as an object (null when absent).
const Object& labels_of(const Object& obj);
// "namespace/name", or "name" for cluster-scoped objects: the key informers and queues use.
std::string object_key(const Object& obj);
std::string object_key(const std::string& ns, const std::string& name);
// Splits a key made by object_key back into (namespace, name).
std::pair<std::string, std::string> split_key(const std::string& key);
// uids of metadata.ownerReferences, and the one marked controller: true ("" if none).
std::vector<std::string> owner_uids(const Object& obj);
std::string controller_uid(const Object& obj);
bool has_deletion_timestamp(const Object& obj);
// List items of built-in types come without kind/apiVersion: fills them in from r (kind only
// when r has one) so objects look the same whichever way they were read.
void complete_type_meta(Object& obj, const Resource& r);

}  // namespace kube
