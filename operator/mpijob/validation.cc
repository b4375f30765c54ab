#include "mpijob/validation.h"

#include <algorithm>

#include "mpijob/launch_mode.h"
#include "mpijob/membership.h"
#include "mpijob/schema_types.h"

namespace mpijob {
namespace {

using Errors = std::vector<FieldError>;

FieldError required(std::string field, std::string detail) {
  return {FieldError::Type::Required, std::move(field), "", std::move(detail)};
}

FieldError invalid(std::string field, std::string value, std::string detail) {
  return {FieldError::Type::Invalid, std::move(field), std::move(value), std::move(detail)};
}

FieldError not_supported(std::string field, const std::string& value,
                         std::vector<std::string> supported) {
  std::string detail = "supported values: ";
  for (size_t i = 0; i < supported.size(); ++i) {
    detail += (i ? ", \"" : "\"") + supported[i] + "\"";
  }
  return {FieldError::Type::NotSupported, std::move(field), kube::Object(value).dump(), detail};
}

// required_detail: the message when the field is absent; "" when it is optional.
void check_one_of(Errors& errs, const kube::Object& obj, const char* key, const std::string& path,
                  const std::vector<std::string>& allowed, const std::string& required_detail) {
  auto v = member<std::string>(obj, key);
  if (!v) {
    if (!required_detail.empty()) errs.push_back(required(path, required_detail));
    return;
  }
  if (std::find(allowed.begin(), allowed.end(), *v) == allowed.end()) {
    errs.push_back(not_supported(path, *v, allowed));
  }
}

void check_nonnegative(Errors& errs, const kube::Object& obj, const char* key,
                       const std::string& path) {
  auto v = member<int64_t>(obj, key);
  if (v && *v < 0) {
    errs.push_back(invalid(path, std::to_string(*v), "must be greater than or equal to 0"));
  }
}

void validate_replica_spec(Errors& errs, const kube::Object& spec, const std::string& path) {
  if (!member<int32_t>(spec, "replicas")) {
    errs.push_back(required(path + ".replicas", "must define number of replicas"));
  }
  const std::string rp = member<std::string>(spec, "restartPolicy").value_or("");
  if (rp != "Never" && rp != "OnFailure") {
    errs.push_back(not_supported(path + ".restartPolicy", rp, {"Never", "OnFailure"}));
  }
  const auto& containers = child(child(child(spec, "template"), "spec"), "containers");
  if (!containers.is_array() || containers.empty()) {
    errs.push_back(required(path + ".template.spec.containers", "must define at least one container"));
  }
}

void validate_replica_specs(Errors& errs, const MPIJob& job) {
  const std::string path = "spec.mpiReplicaSpecs";
  if (!child(job.json(), "spec").contains("mpiReplicaSpecs")) {
    errs.push_back(required(path, "must have replica specs"));
    return;
  }
  const std::string lpath = path + "[Launcher]";
  if (const kube::Object* l = job.replica_spec(ReplicaType::Launcher)) {
    validate_replica_spec(errs, *l, lpath);
    auto n = member<int32_t>(*l, "replicas");
    if (n && *n != 1) errs.push_back(invalid(lpath + ".replicas", std::to_string(*n), "must be 1"));
  } else {
    errs.push_back(required(lpath, "must have Launcher replica spec"));
  }
  const std::string wpath = path + "[Worker]";
  if (const kube::Object* w = job.replica_spec(ReplicaType::Worker)) {
    validate_replica_spec(errs, *w, wpath);
    auto n = member<int32_t>(*w, "replicas");
    if (n && *n <= 0) {
      errs.push_back(invalid(wpath + ".replicas", std::to_string(*n),
                             "must be greater than or equal to 1"));
    }
  }
}

void validate_name(Errors& errs, const MPIJob& job) {
  const int32_t replicas = std::max(job.replicas(ReplicaType::Worker), 1);
  const std::string host = job.name() + kWorkerSuffix + "-" + std::to_string(replicas - 1);
  if (is_dns1035_label(host)) return;
  std::string why = host.size() > 63 ? "must be no more than 63 characters" :
      "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
      "an alphabetic character, and end with an alphanumeric character";
  errs.push_back(invalid("metadata.name", kube::Object(job.name()).dump(),
                         "will not able to create pod and service with invalid DNS label \"" +
                             host + "\": " + why));
}

void validate_run_policy(Errors& errs, const MPIJob& job) {
  const auto& rp = job.run_policy();
  const std::string path = "spec.runPolicy.";
  check_one_of(errs, rp, "cleanPodPolicy", path + "cleanPodPolicy", {"All", "None", "Running"},
               "must have clean Pod policy");
  check_nonnegative(errs, rp, "ttlSecondsAfterFinished", path + "ttlSecondsAfterFinished");
  check_nonnegative(errs, rp, "activeDeadlineSeconds", path + "activeDeadlineSeconds");
  check_nonnegative(errs, rp, "backoffLimit", path + "backoffLimit");
  check_one_of(errs, rp, "managedBy", path + "managedBy",
               {kManagedByMpiOperator, kManagedByMultiKueue}, "");
}

void validate_spec(Errors& errs, const MPIJob& job) {
  const auto& spec = child(job.json(), "spec");
  validate_replica_specs(errs, job);
  if (!job.slots_per_worker()) {
    errs.push_back(required("spec.slotsPerWorker", "must have number of slots per worker"));
  } else {
    check_nonnegative(errs, spec, "slotsPerWorker", "spec.slotsPerWorker");
  }
  validate_run_policy(errs, job);
  if (job.ssh_auth_mount_path().empty()) {
    errs.push_back(required("spec.sshAuthMountPath", "must have a mount path for SSH credentials"));
  }
  check_one_of(errs, spec, "mpiImplementation", "spec.mpiImplementation",
               {"Intel", "MPICH", "OpenMPI"}, "must have an MPI implementation");
  check_one_of(errs, spec, "launcherCreationPolicy", "spec.launcherCreationPolicy",
               {"AtStartup", "WaitForWorkersReady"}, "");
}

void validate_annotations(Errors& errs, const MPIJob& job) {
  const std::string elastic = job.annotation(kAnnotationElastic);
  if (!elastic.empty() && elastic != "true" && elastic != "false") {
    errs.push_back(not_supported(std::string("metadata.annotations[") + kAnnotationElastic + "]",
                                 elastic, {"true", "false"}));
  }
  const std::string launch = job.annotation(kAnnotationLaunch);
  if (!launch.empty() && launch != "ssh" && launch != "agent") {
    errs.push_back(not_supported(std::string("metadata.annotations[") + kAnnotationLaunch + "]",
                                 launch, {"agent", "ssh"}));
  } else if (launch == "agent" && job.mpi_implementation() != MpiImplementation::OpenMPI) {
    // korovod-agent rsh stands in for Open MPI's rsh agent and korovodrun's ssh; Intel MPI's and
    // MPICH's Hydra bootstraps have not been tried with it.
    errs.push_back(invalid("spec.mpiImplementation", member<std::string>(child(job.json(), "spec"), "mpiImplementation").value_or(""),
                           std::string("korovod.io/launch: agent needs OpenMPI (mpirun or korovodrun in the launcher)")));
  }
}

}  // namespace

std::string FieldError::to_string() const {
  switch (type) {
    case Type::Required:
      return field + ": Required value: " + detail;
    case Type::NotSupported:
      return field + ": Unsupported value: " + value + ": " + detail;
    case Type::Invalid:
      break;
  }
  return field + ": Invalid value: " + value + ": " + detail;
}

bool is_dns1035_label(const std::string& s) {
  if (s.empty() || s.size() > 63) return false;
  auto lower_alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!(s.front() >= 'a' && s.front() <= 'z') || !lower_alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return lower_alnum(c) || c == '-'; });
}

std::vector<FieldError> validate(const MPIJob& job) {
  Errors errs = check_schema_types(job.json());
  if (!errs.empty()) return errs;  // what follows reads those fields
  try {
    validate_name(errs, job);
    validate_spec(errs, job);
    validate_annotations(errs, job);
  } catch (const kube::Object::exception& e) {
    // A field of the wrong JSON type (only possible without the CRD's schema).
    errs.push_back(invalid("spec", "<malformed>", e.what()));
  }
  return errs;
}

std::string format_errors(const std::vector<FieldError>& errors) {
  if (errors.size() == 1) return errors[0].to_string();
  std::string out = "[";
  for (size_t i = 0; i < errors.size(); ++i) out += (i ? ", " : "") + errors[i].to_string();
  return out + "]";
}

}  // namespace mpijob
