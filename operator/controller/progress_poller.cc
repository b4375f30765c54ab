#include "controller/progress_poller.h"

#include "kube/clock_sleep.h"
#include "kube/object_meta.h"
#include "mpijob/builders.h"
#include "mpijob/progress.h"
#include "mpijob/status.h"

namespace controller {
namespace {

// Pods whose container has started have a log to read.
bool has_log(const kube::Object& pod) {
  const std::string phase = pod.value("/status/phase"_json_pointer, "");
  return phase == "Running" || phase == "Succeeded" || phase == "Failed";
}

// The launcher pod training runs in now: the newest of the launcher Job's pods with a log.
const kube::Object* current_launcher(const std::vector<kube::Object>& pods) {
  const kube::Object* best = nullptr;
  for (const auto& p : pods) {
    if (!has_log(p)) continue;
    if (!best || p.value("/metadata/creationTimestamp"_json_pointer, "") >
                     best->value("/metadata/creationTimestamp"_json_pointer, "")) {
      best = &p;
    }
  }
  return best;
}

// A JSON merge patch (RFC 7386) that turns `from` into `to`: what `to` lacks is set to null, so
// a field the new line does not have does not linger from an older one.
kube::Object merge_patch(const kube::Object& from, const kube::Object& to) {
  if (!from.is_object() || !to.is_object()) return to;
  kube::Object patch = kube::Object::object();
  for (const auto& [key, value] : to.items()) {
    auto old = from.find(key);
    if (old == from.end()) {
      patch[key] = value;
    } else if (*old != value) {
      patch[key] = merge_patch(*old, value);
    }
  }
  for (const auto& [key, value] : from.items()) {
    if (!to.contains(key)) patch[key] = nullptr;
  }
  return patch;
}

std::string first_container(const kube::Object& pod) {
  return pod.value("/spec/containers/0/name"_json_pointer, "");
}

// How often the container has been restarted in its pod (restartPolicy OnFailure): each restart
// runs the training again from its start.
int64_t restarts_of(const kube::Object& pod, const std::string& container) {
  for (const auto& cs : pod.value("/status/containerStatuses"_json_pointer, kube::Object::array())) {
    if (cs.value("name", "") == container) return cs.value("restartCount", int64_t{0});
  }
  return 0;
}

}  // namespace

ProgressPoller::ProgressPoller(kube::Client& client, mpijob::Cache& cache, LauncherLogs& logs,
                               OperatorMetrics& metrics, Logger& log, kube::Clock& clock,
                               std::vector<std::string> namespaces, ProgressOptions options)
    : client_(client),
      cache_(cache),
      logs_(logs),
      metrics_(metrics),
      log_(log),
      clock_(clock),
      namespaces_(namespaces.empty() ? std::vector<std::string>{""} : std::move(namespaces)),
      options_(options) {}

void ProgressPoller::run(std::stop_token stop) {
  if (options_.interval.count() <= 0) return;
  while (!stop.stop_requested()) {
    poll_once();
    // Wakes early on stop: a condition variable tied to the token.
    const auto wake = clock_.steady_now() + options_.interval;
    while (!stop.stop_requested() && clock_.steady_now() < wake) {
      kube::sleep_until(clock_, std::min(wake, clock_.steady_now() + std::chrono::milliseconds(200)));
    }
  }
}

void ProgressPoller::poll_once() {
  std::set<std::string> seen;
  for (const auto& ns : namespaces_) {
    for (const auto& job : cache_.list(mpijob::kMPIJobs, ns, "")) {
      seen.insert(kube::uid_of(job));
      try {
        poll_job(job);
      } catch (const std::exception& e) {
        log_.warning("progress: cannot update", {{"mpijob", kube::namespace_of(job) + "/" + kube::name_of(job)},
                                                 {"error", e.what()}});
      }
    }
  }
  std::erase_if(final_read_, [&](const std::string& uid) { return !seen.count(uid); });
}

void ProgressPoller::poll_job(const kube::Object& job) {
  const std::string ns = kube::namespace_of(job), name = kube::name_of(job), uid = kube::uid_of(job);
  const mpijob::MPIJob mpi_job(job);
  const bool finished = mpijob::is_finished(mpi_job.status());
  if (finished && final_read_.count(uid)) return;
  const kube::Object current = job.value("/status/progress"_json_pointer, kube::Object());
  // The launcher Job this MPIJob controls (a Job of that name made by someone else is not it),
  // and the pods that Job controls.
  auto launcher_job = cache_.get(kube::resources::kJobs, ns, mpijob::launcher_name(mpi_job));
  if (launcher_job && !mpijob::is_controlled_by(*launcher_job, uid)) launcher_job.reset();
  const std::vector<kube::Object> pods =
      launcher_job ? cache_.controlled_by(kube::resources::kPods, ns, kube::uid_of(*launcher_job))
                   : std::vector<kube::Object>{};
  const kube::Object* pod = current_launcher(pods);
  std::optional<kube::Object> desired;
  bool read = false;
  if (pod) {
    const std::string pod_name = kube::name_of(*pod), container = first_container(*pod);
    const int64_t restarts = restarts_of(*pod, container);
    // The log of the container running now: a restarted one starts empty.
    if (std::optional<std::string> text = logs_.tail(ns, pod_name, container, options_.tail_lines)) {
      read = true;
      if (auto line = mpijob::last_progress_line(*text)) desired = mpijob::progress_status(*line, pod_name, restarts);
      // No line in the tail: a new launcher pod or container has not printed one yet (training
      // started over: the old progress goes), or the script printed more than the tail since
      // the last one (kept).
      const bool started_over = current.is_object() && (current.value("launcherPod", "") != pod_name ||
                                                        current.value("launcherRestarts", int64_t{0}) != restarts);
      if (!desired && started_over) desired = kube::Object();
    }
  }
  if (desired && *desired != current) {
    kube::PatchOptions status_patch;
    status_patch.status = true;
    client_.patch(mpijob::kMPIJobs, ns, name, kube::PatchType::Merge,
                  kube::Object{{"status", {{"progress", merge_patch(current, *desired)}}}}.dump(), status_patch);
  }
  const kube::Object& now = desired ? *desired : current;
  if (finished || !now.is_object()) {
    metrics_.remove_job_progress(ns, name);
  } else {
    metrics_.set_job_progress(ns, name, now);
  }
  // A finished job's launcher is read once: its final line, then the progress stays as it is.
  if (finished && (read || !pod)) final_read_.insert(uid);
}

}  // namespace controller
