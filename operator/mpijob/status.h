// Pure status computation: (job, launcher Job, launcher pods, worker pods, now) -> new status,
// the events to emit and the counters to bump. Implements the reference's updateMPIJobStatus and
// setCondition, with korovod's differences:
//  - events and counters fire once per condition transition (never re-emitted on a resync);
//  - an eviction sets completionTime, so cleanPodPolicy runs;
//  - a failed worker pod is restarted (deleted, then recreated by the next sync) while the
//    restart budget lasts: launcher failures (Job.status.failed) + worker restarts must stay
//    <= runPolicy.backoffLimit (default 6). The count lives in status.restartCount, and the
//    counted pods' UIDs in status.restartedPodUIDs, so it survives operator restarts and a pod
//    is never counted twice. Past the budget the MPIJob fails with a reason naming the pod,
//    container and exit code;
//  - a Running=False condition added at completion goes before the terminal condition, so the
//    last condition (the State printer column) stays Succeeded/Failed.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "mpijob/types.h"

namespace mpijob {

// Reasons (mpi_job_controller_status.go) plus korovod's.
inline constexpr const char* kReasonCreated = "MPIJobCreated";
inline constexpr const char* kReasonSucceeded = "MPIJobSucceeded";
inline constexpr const char* kReasonRunning = "MPIJobRunning";
inline constexpr const char* kReasonSuspended = "MPIJobSuspended";
inline constexpr const char* kReasonResumed = "MPIJobResumed";
inline constexpr const char* kReasonFailed = "MPIJobFailed";
inline constexpr const char* kReasonEvicted = "MPIJobEvicted";
inline constexpr const char* kReasonRestarting = "MPIJobRestarting";
inline constexpr const char* kReasonValidationError = "ValidationError";
inline constexpr const char* kReasonBackoffLimitExceeded = "BackoffLimitExceeded";
inline constexpr int32_t kDefaultBackoffLimit = 6;  // the Kubernetes Job default

struct Event {
  std::string type;  // "Normal" / "Warning"
  std::string reason;
  std::string message;
  bool operator==(const Event&) const = default;
};

// mpi_operator_jobs_{created,successful,failed}_total
enum class Counter { JobsCreated, JobsSuccessful, JobsFailed };

// Accumulates one sync's decisions.
struct StatusUpdate {
  JobStatus status;
  std::vector<Event> events;
  std::vector<Counter> counters;
  std::vector<std::string> restart_pods;  // failed worker pods to delete so they are recreated
};

// setCondition: no-op when status and reason are unchanged; keeps lastTransitionTime when only
// the reason changes; Running and Restarting replace each other; Failed/Succeeded flip Running,
// Restarting and Failed to False. The changed condition moves to the end. Returns true if changed.
bool set_condition(JobStatus& s, const std::string& type, const std::string& status,
                   const std::string& reason, const std::string& message, const std::string& now);

bool is_finished(const JobStatus& s);  // Succeeded or Failed is True

// Sets Failed=True with completionTime; emits the Warning event and bumps the failed counter
// only on the transition.
void mark_failed(StatusUpdate& u, const std::string& reason, const std::string& message,
                 const std::string& now);

struct Observed;  // plan.h

// updateMPIJobStatus steps a-f on u.status (the caller sets u.status = job.status() first).
// launcher_job is nullptr when there is none; pods are those the job (or its Job) controls.
void update_job_status(StatusUpdate& u, const MPIJob& job, const kube::Object* launcher_job,
                       const std::vector<kube::Object>& launcher_pods,
                       const std::vector<kube::Object>& worker_pods,
                       std::chrono::system_clock::time_point now);

// "pod X container Y exited with code N (reason)" for a failed pod.
std::string describe_pod_failure(const kube::Object& pod);

}  // namespace mpijob
