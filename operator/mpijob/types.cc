#include "mpijob/types.h"

#include <cmath>
#include <stdexcept>

#include "kube/object_meta.h"

namespace mpijob {

const kube::Resource kMPIJobs{"kubeflow.org", "v2beta1", "mpijobs", "MPIJob", true};

const char* to_string(ReplicaType t) {
  return t == ReplicaType::Launcher ? "Launcher" : "Worker";
}

std::optional<int64_t> integer_within(const kube::Object& v, int64_t lo, int64_t hi) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(hi)) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) {
    const int64_t n = v.get<int64_t>();
    if (n < lo || n > hi) return std::nullopt;
    return n;
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();  // hi + 1 is a power of two, exact as a double
    if (d != std::trunc(d) || d < static_cast<double>(lo) || d >= static_cast<double>(hi) + 1.0) return std::nullopt;
    return static_cast<int64_t>(d);
  }
  return std::nullopt;
}

int64_t integer_in_range(const kube::Object& v, const char* key, int64_t lo, int64_t hi) {
  if (const std::optional<int64_t> n = integer_within(v, lo, hi)) return *n;
  const std::string range = "from " + std::to_string(lo) + " to " + std::to_string(hi);
  throw kube::Object::type_error::create(302, std::string(key) + " must be an integer " + range + ", not " + v.dump(), &v);
}

const kube::Object& empty_object() {
  static const kube::Object kEmpty = kube::Object::object();
  return kEmpty;
}

const kube::Object& child(const kube::Object& j, const char* key) {
  if (!j.is_object()) return empty_object();
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? empty_object() : *it;
}

bool is_controlled_by(const kube::Object& o, const std::string& owner_uid) {
  return !owner_uid.empty() && kube::controller_uid(o) == owner_uid;
}

// ---- status ----

const Condition* JobStatus::condition(const std::string& type) const {
  for (const auto& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

bool JobStatus::has_true(const std::string& type) const {
  const Condition* c = condition(type);
  return c != nullptr && c->status == "True";
}

namespace {

Condition condition_from_json(const kube::Object& j) {
  Condition c;
  c.type = member<std::string>(j, "type").value_or("");
  c.status = member<std::string>(j, "status").value_or("");
  c.reason = member<std::string>(j, "reason").value_or("");
  c.message = member<std::string>(j, "message").value_or("");
  c.last_update_time = member<std::string>(j, "lastUpdateTime").value_or("");
  c.last_transition_time = member<std::string>(j, "lastTransitionTime").value_or("");
  return c;
}

kube::Object condition_to_json(const Condition& c) {
  kube::Object j = {{"type", c.type}, {"status", c.status}};
  if (!c.reason.empty()) j["reason"] = c.reason;
  if (!c.message.empty()) j["message"] = c.message;
  if (!c.last_update_time.empty()) j["lastUpdateTime"] = c.last_update_time;
  if (!c.last_transition_time.empty()) j["lastTransitionTime"] = c.last_transition_time;
  return j;
}

ReplicaStatus replica_status_from_json(const kube::Object& j) {
  ReplicaStatus r;
  r.extra = j.is_object() ? j : kube::Object::object();
  r.active = member<int32_t>(j, "active").value_or(0);
  r.succeeded = member<int32_t>(j, "succeeded").value_or(0);
  r.failed = member<int32_t>(j, "failed").value_or(0);
  r.selector = member<std::string>(j, "selector").value_or("");
  for (const char* k : {"active", "succeeded", "failed", "selector"}) r.extra.erase(k);
  return r;
}

// Zero counts are omitted, as Go's omitempty does, so an unchanged status compares equal.
kube::Object replica_status_to_json(const ReplicaStatus& r) {
  kube::Object j = r.extra;
  if (r.active != 0) j["active"] = r.active;
  if (r.succeeded != 0) j["succeeded"] = r.succeeded;
  if (r.failed != 0) j["failed"] = r.failed;
  if (!r.selector.empty()) j["selector"] = r.selector;
  return j;
}

constexpr const char* kKnownStatusKeys[] = {
    "conditions", "replicaStatuses",  "startTime",        "completionTime",
    "lastReconcileTime", "restartCount", "restartedPodUIDs", "readyWorkers",
    "profile"};

}  // namespace

JobStatus status_from_json(const kube::Object& j) {
  JobStatus s;
  if (!j.is_object()) return s;
  for (const auto& c : child(j, "conditions")) s.conditions.push_back(condition_from_json(c));
  for (const auto& [k, v] : child(j, "replicaStatuses").items()) {
    s.replica_statuses[k] = replica_status_from_json(v);
  }
  s.start_time = member<std::string>(j, "startTime");
  s.completion_time = member<std::string>(j, "completionTime");
  s.last_reconcile_time = member<std::string>(j, "lastReconcileTime");
  s.restart_count = member<int32_t>(j, "restartCount").value_or(0);
  s.restarted_pod_uids =
      member<std::vector<std::string>>(j, "restartedPodUIDs").value_or(std::vector<std::string>{});
  s.ready_workers = member<int32_t>(j, "readyWorkers").value_or(0);
  if (j.contains("profile") && j["profile"].is_object()) s.profile = j["profile"];
  s.extra = j;
  for (const char* k : kKnownStatusKeys) s.extra.erase(k);
  return s;
}

kube::Object status_to_json(const JobStatus& s) {
  kube::Object j = s.extra;
  if (!s.conditions.empty()) {
    j["conditions"] = kube::Object::array();
    for (const auto& c : s.conditions) j["conditions"].push_back(condition_to_json(c));
  }
  if (!s.replica_statuses.empty()) {
    j["replicaStatuses"] = kube::Object::object();
    for (const auto& [k, v] : s.replica_statuses) j["replicaStatuses"][k] = replica_status_to_json(v);
  }
  if (s.start_time) j["startTime"] = *s.start_time;
  if (s.completion_time) j["completionTime"] = *s.completion_time;
  if (s.last_reconcile_time) j["lastReconcileTime"] = *s.last_reconcile_time;
  if (s.restart_count != 0) j["restartCount"] = s.restart_count;
  if (!s.restarted_pod_uids.empty()) j["restartedPodUIDs"] = s.restarted_pod_uids;
  if (s.ready_workers != 0) j["readyWorkers"] = s.ready_workers;
  if (s.profile) j["profile"] = *s.profile;
  return j;
}

// ---- MPIJob ----

MPIJob::MPIJob(kube::Object obj) : obj_(std::move(obj)) {
  if (!obj_.is_object()) throw std::invalid_argument("MPIJob: not a JSON object");
}

std::string MPIJob::name() const { return kube::name_of(obj_); }
std::string MPIJob::ns() const { return kube::namespace_of(obj_); }
std::string MPIJob::uid() const { return kube::uid_of(obj_); }

std::string MPIJob::annotation(const std::string& key) const {
  return member<std::string>(child(child(obj_, "metadata"), "annotations"), key.c_str())
      .value_or("");
}

bool MPIJob::being_deleted() const { return kube::has_deletion_timestamp(obj_); }

const kube::Object* MPIJob::replica_spec(ReplicaType t) const {
  const auto& specs = child(child(obj_, "spec"), "mpiReplicaSpecs");
  auto it = specs.find(to_string(t));
  return it == specs.end() || it->is_null() ? nullptr : &*it;
}

int32_t MPIJob::replicas(ReplicaType t) const {
  const kube::Object* s = replica_spec(t);
  return s ? member<int32_t>(*s, "replicas").value_or(0) : 0;
}

std::string MPIJob::restart_policy(ReplicaType t) const {
  const kube::Object* s = replica_spec(t);
  return s ? member<std::string>(*s, "restartPolicy").value_or("") : "";
}

const kube::Object& MPIJob::pod_template(ReplicaType t) const {
  const kube::Object* s = replica_spec(t);
  return s ? child(*s, "template") : empty_object();
}

std::optional<int32_t> MPIJob::slots_per_worker() const {
  return member<int32_t>(child(obj_, "spec"), "slotsPerWorker");
}

int32_t MPIJob::slots() const { return slots_per_worker().value_or(1); }

bool MPIJob::run_launcher_as_worker() const {
  return member<bool>(child(obj_, "spec"), "runLauncherAsWorker").value_or(false);
}

std::string MPIJob::clean_pod_policy() const {
  return member<std::string>(run_policy(), "cleanPodPolicy").value_or("");
}

MpiImplementation MPIJob::mpi_implementation() const {
  auto v = member<std::string>(child(obj_, "spec"), "mpiImplementation").value_or("OpenMPI");
  if (v == "Intel") return MpiImplementation::Intel;
  if (v == "MPICH") return MpiImplementation::MPICH;
  return MpiImplementation::OpenMPI;
}

std::string MPIJob::launcher_creation_policy() const {
  return member<std::string>(child(obj_, "spec"), "launcherCreationPolicy").value_or("AtStartup");
}

std::string MPIJob::ssh_auth_mount_path() const {
  return member<std::string>(child(obj_, "spec"), "sshAuthMountPath").value_or("");
}

const kube::Object& MPIJob::run_policy() const { return child(child(obj_, "spec"), "runPolicy"); }

std::optional<int64_t> MPIJob::ttl_seconds_after_finished() const {
  return member<int64_t>(run_policy(), "ttlSecondsAfterFinished");
}
std::optional<int64_t> MPIJob::active_deadline_seconds() const {
  return member<int64_t>(run_policy(), "activeDeadlineSeconds");
}
std::optional<int32_t> MPIJob::backoff_limit() const {
  return member<int32_t>(run_policy(), "backoffLimit");
}
bool MPIJob::suspended() const { return member<bool>(run_policy(), "suspend").value_or(false); }
std::optional<std::string> MPIJob::managed_by() const {
  return member<std::string>(run_policy(), "managedBy");
}
const kube::Object* MPIJob::scheduling_policy() const {
  const auto& rp = run_policy();
  auto it = rp.find("schedulingPolicy");
  return it == rp.end() || it->is_null() ? nullptr : &*it;
}

JobStatus MPIJob::status() const { return status_from_json(child(obj_, "status")); }

}  // namespace mpijob
