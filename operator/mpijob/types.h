// MPIJob (kubeflow.org/v2beta1) as a typed view over the object's JSON.
//
// The MPIJob is kept as the JSON the API server sent, so fields korovod does not model (pod
// templates, future API fields) round-trip untouched; the accessors below read the fields the
// controller needs. Status is the exception: the controller owns it, so it is parsed into
// JobStatus and written back whole (unknown status fields are kept in JobStatus::extra).
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "kube/client.h"

namespace mpijob {

// Constants shared with Kubeflow's mpi-operator (names, labels, mount paths).
inline constexpr const char* kApiVersion = "kubeflow.org/v2beta1";
inline constexpr const char* kKind = "MPIJob";
inline constexpr const char* kOperatorName = "mpi-operator";
inline constexpr const char* kManagedByMpiOperator = "kubeflow.org/mpi-operator";
inline constexpr const char* kManagedByMultiKueue = "kueue.x-k8s.io/multikueue";
inline constexpr const char* kLabelOperatorName = "training.kubeflow.org/operator-name";
inline constexpr const char* kLabelJobName = "training.kubeflow.org/job-name";
inline constexpr const char* kLabelJobRole = "training.kubeflow.org/job-role";
inline constexpr const char* kLabelReplicaIndex = "training.kubeflow.org/replica-index";
inline constexpr const char* kConfigSuffix = "-config";
inline constexpr const char* kSshSuffix = "-ssh";
inline constexpr const char* kLauncherSuffix = "-launcher";
inline constexpr const char* kWorkerSuffix = "-worker";
inline constexpr const char* kConfigVolume = "mpi-job-config";
inline constexpr const char* kConfigMountPath = "/etc/mpi";
inline constexpr const char* kSshAuthVolume = "ssh-auth";
inline constexpr const char* kRootSshPath = "/root/.ssh";
inline constexpr const char* kHostfileName = "hostfile";
inline constexpr const char* kDiscoverHostsName = "discover_hosts.sh";
// korovod: the job secret every TCP connection of the job proves (the rendezvous store, the
// ranks' meshes: worker-runtime/src/transport/tcp/auth.h). A key of the <job>-ssh Secret,
// mounted read-only at kJobSecretMountPath in the launcher's and the workers' first container;
// the pods' env names the file (kJobSecretFileEnv), never the value.
inline constexpr const char* kJobSecretKey = "korovod-job-secret";
inline constexpr const char* kJobSecretVolume = "korovod-job-secret";
inline constexpr const char* kJobSecretMountPath = "/etc/korovod/job-secret";
inline constexpr const char* kJobSecretFileName = "secret";
inline constexpr const char* kJobSecretFileEnv = "KOROVOD_JOB_SECRET_FILE";

extern const kube::Resource kMPIJobs;  // kubeflow.org/v2beta1 mpijobs

enum class ReplicaType { Launcher, Worker };
const char* to_string(ReplicaType t);  // "Launcher" / "Worker"

enum class MpiImplementation { OpenMPI, Intel, MPICH };

// One entry of status.conditions. Times are RFC 3339 strings as the API serializes them.
struct Condition {
  std::string type, status, reason, message, last_update_time, last_transition_time;
  bool operator==(const Condition&) const = default;
};

struct ReplicaStatus {
  int32_t active = 0, succeeded = 0, failed = 0;
  // The pods' label selector in string form (set for Worker: the scale subresource's
  // labelSelectorPath, as Kubeflow's training-operator declares it).
  std::string selector;
  kube::Object extra = kube::Object::object();  // labelSelector: kept, never set
  bool operator==(const ReplicaStatus&) const = default;
};

struct JobStatus {
  std::vector<Condition> conditions;
  std::map<std::string, ReplicaStatus> replica_statuses;  // "Launcher", "Worker"
  std::optional<std::string> start_time, completion_time, last_reconcile_time;
  // korovod: the restart budget. restart_count is how many failed worker pods were recreated;
  // restarted_pod_uids lists the UIDs of counted pods that may still exist, so a sync that
  // sees the same failed pod again (e.g. after an operator restart) does not count it twice.
  int32_t restart_count = 0;
  std::vector<std::string> restarted_pod_uids;
  // korovod: the workers discover_hosts.sh lists (Running, Ready): an elastic job's training
  // workers. 0 once the job finished.
  int32_t ready_workers = 0;
  // korovod: the admin profile the job was built with, pinned at its first sync:
  // {"name": ..., "values": {...}} (profile.h).
  std::optional<kube::Object> profile;
  kube::Object extra = kube::Object::object();  // unknown status fields, kept as they were

  bool operator==(const JobStatus&) const = default;
  const Condition* condition(const std::string& type) const;
  bool has_true(const std::string& type) const;
};

JobStatus status_from_json(const kube::Object& status);
kube::Object status_to_json(const JobStatus& s);

class MPIJob {
 public:
  explicit MPIJob(kube::Object obj);

  const kube::Object& json() const { return obj_; }
  kube::Object& json() { return obj_; }

  std::string name() const;
  std::string ns() const;
  std::string uid() const;
  std::string annotation(const std::string& key) const;  // "" when absent
  bool being_deleted() const;

  // spec.mpiReplicaSpecs[t]; nullptr when absent.
  const kube::Object* replica_spec(ReplicaType t) const;
  int32_t replicas(ReplicaType t) const;  // 0 when the spec or its replicas is absent
  std::string restart_policy(ReplicaType t) const;
  const kube::Object& pod_template(ReplicaType t) const;  // {} when absent

  std::optional<int32_t> slots_per_worker() const;
  int32_t slots() const;  // slots_per_worker() after defaulting, 1 when still absent
  bool run_launcher_as_worker() const;
  std::string clean_pod_policy() const;
  MpiImplementation mpi_implementation() const;
  std::string launcher_creation_policy() const;
  std::string ssh_auth_mount_path() const;

  const kube::Object& run_policy() const;  // {} when absent
  std::optional<int64_t> ttl_seconds_after_finished() const;
  std::optional<int64_t> active_deadline_seconds() const;
  std::optional<int32_t> backoff_limit() const;
  bool suspended() const;
  std::optional<std::string> managed_by() const;
  const kube::Object* scheduling_policy() const;  // nullptr when absent

  JobStatus status() const;

 private:
  kube::Object obj_;
};

// The integer `v` within [lo, hi]: a JSON integer, or a whole number written as a float (2.0, as
// Kubernetes' JSON decoding reads it); nullopt for anything else (2.5, 1e42, "2", out of range).
std::optional<int64_t> integer_within(const kube::Object& v, int64_t lo, int64_t hi);
// integer_within, or nlohmann's type_error naming `key` (the member v is): no silent truncation of
// 2.5, no undefined conversion of 1e42.
int64_t integer_in_range(const kube::Object& v, const char* key, int64_t lo, int64_t hi);

// Reads an optional member; nullopt when j is not an object, the key is absent or null. A member
// of another type throws nlohmann's type_error (check_schema_types, schema_types.h, reports
// those with their paths first).
template <class T>
std::optional<T> member(const kube::Object& j, const char* key) {
  if (!j.is_object()) return std::nullopt;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    static_assert(std::is_signed_v<T> && sizeof(T) <= sizeof(int64_t));
    return static_cast<T>(integer_in_range(*it, key, std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
  } else {
    return it->template get<T>();
  }
}

const kube::Object& empty_object();  // a shared {}
// The object at key, or a shared empty object when absent.
const kube::Object& child(const kube::Object& j, const char* key);

// True when o has an ownerReference with controller=true and the given (non-empty) uid. The other
// metadata readers (name, uid, controller uid) are kube/object_meta.h's.
bool is_controlled_by(const kube::Object& o, const std::string& owner_uid);

}  // namespace mpijob
