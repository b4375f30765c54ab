#include "mpijob/profile.h"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string_view>

#include "mpijob/defaults.h"

namespace mpijob {
namespace {

using kube::Object;

[[noreturn]] void bad(const std::string& profile, const std::string& field, const std::string& why) {
  throw std::invalid_argument("profile \"" + profile + "\": " + field + ": " + why);
}

void check_string_map(const std::string& profile, const std::string& field, const Object& v,
                      bool numbers_too) {
  if (!v.is_object()) bad(profile, field, "must be a map");
  for (const auto& [k, x] : v.items()) {
    if (!x.is_string() && !(numbers_too && x.is_number())) {
      bad(profile, field + "." + k, numbers_too ? "must be a quantity" : "must be a string");
    }
  }
}

void check_resources(const std::string& profile, const std::string& field, const Object& v) {
  if (!v.is_object()) bad(profile, field, "must be a map with requests and/or limits");
  for (const auto& [k, x] : v.items()) {
    if (k != "requests" && k != "limits") bad(profile, field + "." + k, "unknown field (want requests or limits)");
    check_string_map(profile, field + "." + k, x, true);
  }
}

void check_network(const std::string& profile, const Object& v) {
  if (!v.is_object()) bad(profile, "network", "must be a map");
  constexpr std::array<std::string_view, 7> known = {
      "profile", "ncclIbHca", "ncclIbGidIndex", "ncclSocketIfname", "ncclNetGdrLevel",
      "rdmaDevices", "rdmaResource"};
  for (const auto& [k, x] : v.items()) {
    if (std::find(known.begin(), known.end(), k) == known.end()) {
      bad(profile, "network." + k, "unknown field");
    }
    if (!x.is_string()) bad(profile, "network." + k, "must be a string");
  }
  try {  // the kind, and the RDMA resource's "<name>: <count>" form, as a job's annotations are
    resolve_network_profile(MPIJob(Object::object()), profile_network(Object{{"network", v}}, {}));
  } catch (const std::invalid_argument& e) {
    bad(profile, "network", e.what());
  }
}

void check_field(const std::string& profile, const std::string& k, const Object& x) {
  if (k == "image" || k == "schedulerName") {
    if (!x.is_string() || x.get<std::string>().empty()) bad(profile, k, "must be a non-empty string");
  } else if (k == "mpiImplementation") {
    if (x != "OpenMPI" && x != "Intel" && x != "MPICH") bad(profile, k, "must be OpenMPI, Intel or MPICH");
  } else if (k == "gpusPerWorker") {
    if (!integer_within(x, 0, 1 << 20)) bad(profile, k, "must be a whole number, 0 or more");
  } else if (k == "workerResources" || k == "launcherResources") {
    check_resources(profile, k, x);
  } else if (k == "tolerations") {
    if (!x.is_array()) bad(profile, k, "must be a list of tolerations");
    for (const auto& t : x) {
      if (!t.is_object()) bad(profile, k, "each toleration must be a map");
    }
  } else if (k == "nodeSelector") {
    check_string_map(profile, k, x, false);
  } else if (k == "network") {
    check_network(profile, x);
  } else {
    bad(profile, k,
        "unknown field (want image, mpiImplementation, gpusPerWorker, workerResources, "
        "launcherResources, tolerations, nodeSelector, schedulerName or network)");
  }
}

bool is_unset(const Object& parent, const char* key) {
  auto it = parent.find(key);
  return it == parent.end() || it->is_null() || (it->is_string() && it->get<std::string>().empty()) ||
         ((it->is_array() || it->is_object()) && it->empty());
}

// Resource names the container mentions in requests or limits.
bool names_resource(const Object& container, const std::string& name) {
  const auto& res = child(container, "resources");
  return child(res, "requests").contains(name) || child(res, "limits").contains(name);
}

void merge_resources(const Object& from, Object& container) {
  const Object job_view = container;  // what the job set, before any profile value
  for (const char* kind : {"requests", "limits"}) {
    for (const auto& [name, qty] : child(from, kind).items()) {
      if (!names_resource(job_view, name)) container["resources"][kind][name] = qty;
    }
  }
}

void apply_to_template(const Object& values, ReplicaType t, MPIJob& job) {
  auto& specs = job.json()["spec"]["mpiReplicaSpecs"];
  if (!specs.is_object() || !specs.contains(to_string(t))) return;
  auto& pod = specs[to_string(t)]["template"]["spec"];
  if (!pod.is_object()) return;
  for (const char* key : {"schedulerName", "tolerations"}) {
    if (values.contains(key) && is_unset(pod, key)) pod[key] = values[key];
  }
  for (const auto& [k, v] : child(values, "nodeSelector").items()) {
    if (!child(pod, "nodeSelector").contains(k)) pod["nodeSelector"][k] = v;
  }
  auto& containers = pod["containers"];
  if (!containers.is_array() || containers.empty() || !containers[0].is_object()) return;
  Object& main = containers[0];
  if (values.contains("image") && is_unset(main, "image")) main["image"] = values["image"];
  const bool worker = t == ReplicaType::Worker;
  merge_resources(child(values, worker ? "workerResources" : "launcherResources"), main);
  if (worker && values.contains("gpusPerWorker") && !names_resource(main, kGpuResource)) {
    main["resources"]["limits"][kGpuResource] = values["gpusPerWorker"];
  }
}

}  // namespace

Object parse_profile(const std::string& name, const std::string& json_text) {
  Object v = Object::parse(json_text, nullptr, false);
  if (v.is_discarded()) bad(name, "(value)", "not valid JSON");
  if (!v.is_object()) bad(name, "(value)", "must be a map of fields");
  for (const auto& [k, x] : v.items()) check_field(name, k, x);
  return v;
}

ProfileCatalog profiles_from_config_map(const Object& config_map) {
  ProfileCatalog c;
  for (const auto& [name, text] : child(config_map, "data").items()) {
    try {
      c.profiles[name] = parse_profile(name, text.is_string() ? text.get<std::string>() : "");
    } catch (const std::invalid_argument& e) {
      c.invalid[name] = e.what();
    }
  }
  return c;
}

Object profiles_config_map_data(const Object& profiles_or_values) {
  const Object& by_name = profiles_or_values.contains("profiles") ? profiles_or_values["profiles"]
                                                                  : profiles_or_values;
  if (!by_name.is_object()) throw std::invalid_argument("profiles: must be a map of profiles by name");
  Object data = Object::object();
  for (const auto& [name, profile] : by_name.items()) {
    data[name] = parse_profile(name, profile.dump()).dump();
  }
  return data;
}

std::string profile_names(const ProfileCatalog& catalog) {
  std::map<std::string, bool> all;
  for (const auto& [n, p] : catalog.profiles) all[n] = true;
  for (const auto& [n, e] : catalog.invalid) all[n] = true;
  if (all.empty()) return "none are defined";
  std::string out;
  for (const auto& [n, unused] : all) out += (out.empty() ? "" : ", ") + n;
  return out;
}

ProfileChoice choose_profile(const MPIJob& job, const std::optional<ProfileCatalog>& catalog) {
  ProfileChoice c;
  const auto& pinned = child(child(job.json(), "status"), "profile");
  if (pinned.is_object() && pinned.contains("name")) {
    c.pinned = pinned;
    return c;
  }
  const std::string name = job.annotation(kAnnotationProfile);
  if (name.empty()) return c;
  const std::string where = "metadata.annotations[" + std::string(kAnnotationProfile) + "]: ";
  if (!catalog) {
    c.error_reason = kReasonUnknownProfile;
    c.error_message = where + "profile \"" + name +
                      "\" does not exist: this operator has no profiles (the Helm chart's "
                      "profiles value is empty)";
  } else if (auto bad_one = catalog->invalid.find(name); bad_one != catalog->invalid.end()) {
    c.error_reason = kReasonInvalidProfile;
    c.error_message = where + bad_one->second;
  } else if (auto it = catalog->profiles.find(name); it == catalog->profiles.end()) {
    c.error_reason = kReasonUnknownProfile;
    c.error_message = where + "profile \"" + name + "\" does not exist; profiles: " +
                      profile_names(*catalog);
  } else {
    c.pinned = Object{{"name", name}, {"values", it->second}};
  }
  return c;
}

void apply_profile(const Object& values, MPIJob& job) {
  if (!values.is_object() || values.empty()) return;
  auto& spec = job.json()["spec"];
  if (!spec.is_object()) return;
  if (values.contains("mpiImplementation") && is_unset(spec, "mpiImplementation")) {
    spec["mpiImplementation"] = values["mpiImplementation"];
  }
  apply_to_template(values, ReplicaType::Launcher, job);
  apply_to_template(values, ReplicaType::Worker, job);
}

NetworkProfile profile_network(const Object& values, const NetworkProfile& operator_default) {
  NetworkProfile p = operator_default;
  const auto& net = child(values, "network");
  if (auto kind = member<std::string>(net, "profile")) p.kind = parse_network_kind(*kind);
  const std::pair<const char*, std::string NetworkProfile::*> fields[] = {
      {"ncclIbHca", &NetworkProfile::ib_hca},
      {"ncclIbGidIndex", &NetworkProfile::ib_gid_index},
      {"ncclSocketIfname", &NetworkProfile::socket_ifname},
      {"ncclNetGdrLevel", &NetworkProfile::net_gdr_level},
      {"rdmaDevices", &NetworkProfile::rdma_devices},
      {"rdmaResource", &NetworkProfile::rdma_resource}};
  for (const auto& [key, field] : fields) {
    if (auto v = member<std::string>(net, key); v && !v->empty()) p.*field = *v;
  }
  return p;
}

}  // namespace mpijob
