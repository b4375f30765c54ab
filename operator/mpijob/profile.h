// korovod extension: admin profiles (docs/profiles.md).
//
// Cluster admins define named defaults in the Helm chart's `profiles` value; the chart renders
// them into a ConfigMap, one key per profile, each value the profile as JSON. A job picks one
// with the annotation korovod.io/profile. The profile fills only what the job leaves unset: a
// value the job sets itself always wins (apply_profile below says exactly how, field by field).
//
// A job's profile is read once, at its first sync, and pinned in status.profile; every later
// sync builds from the pinned copy, so editing or deleting a profile never changes the pods of
// a job that already started (a recreated or added worker looks like its siblings).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "mpijob/network_profile.h"
#include "mpijob/types.h"

namespace mpijob {

inline constexpr const char* kAnnotationProfile = "korovod.io/profile";
inline constexpr const char* kReasonUnknownProfile = "UnknownProfile";
inline constexpr const char* kReasonInvalidProfile = "InvalidProfile";

// The profiles one operator knows: name -> the profile's JSON (checked by parse_profile), or
// the error that made it unusable (a ConfigMap edited by hand).
struct ProfileCatalog {
  std::map<std::string, kube::Object> profiles;
  std::map<std::string, std::string> invalid;  // name -> why
};

// One profile's JSON text, checked: only the known fields, each of its type. Throws
// std::invalid_argument naming the profile and the field.
kube::Object parse_profile(const std::string& name, const std::string& json_text);

// The catalog in a ConfigMap's data (each key a profile name, each value its JSON).
ProfileCatalog profiles_from_config_map(const kube::Object& config_map);

// The ConfigMap data for profiles given by name, as the Helm chart renders its profiles value
// (each profile as JSON). Accepts the profiles map itself or a values file holding it under
// `profiles`. Throws std::invalid_argument naming the profile and field of the first bad one.
kube::Object profiles_config_map_data(const kube::Object& profiles_or_values);

// "a, b" (sorted, invalid ones included), or "none are defined".
std::string profile_names(const ProfileCatalog& catalog);

// What a job's first sync found for its korovod.io/profile annotation.
struct ProfileChoice {
  std::optional<kube::Object> pinned;  // {name, values}: for status.profile
  std::string error_reason;           // UnknownProfile / InvalidProfile; "" when fine
  std::string error_message;          // names the job's annotation and the profiles that exist
};

// The profile of a job: the one pinned in status.profile when there is one, else the
// annotation's from the catalog (nullopt catalog: this operator has no profiles configured).
// No annotation and nothing pinned: an empty choice.
ProfileChoice choose_profile(const MPIJob& job, const std::optional<ProfileCatalog>& catalog);

// Fills what the job leaves unset from the profile's values, in memory, before defaulting
// (pure): spec.mpiImplementation; in the launcher's and the workers' pod template the first
// container's image, spec.schedulerName, spec.tolerations (the job's list, when it has one,
// replaces the profile's whole), spec.nodeSelector (key by key); the first container's
// resources from workerResources / launcherResources and, for workers, gpusPerWorker as the
// nvidia.com/gpu limit, resource name by resource name (a resource the job names in requests or
// limits takes nothing from the profile).
void apply_profile(const kube::Object& values, MPIJob& job);

// The network settings of a profile over the operator's default (--network-profile); the job's
// korovod.io/ network annotations still override the result (resolve_network_profile).
NetworkProfile profile_network(const kube::Object& values, const NetworkProfile& operator_default);

}  // namespace mpijob
