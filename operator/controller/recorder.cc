#include "controller/recorder.h"

#include <fmt/format.h>

#include "kube/object_meta.h"

namespace controller {

kube::Object EventRecorder::build(const kube::Object& job, const mpijob::Event& e,
                                  uint64_t seq) const {
  const auto now = clock_.now();
  const auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         now.time_since_epoch()).count();
  const std::string ts = kube::format_time(now);
  std::string message = e.message.size() > 1024 ? e.message.substr(0, 1024) : e.message;
  return {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata",
       {{"name", fmt::format("{}.{:x}{:x}", kube::name_of(job), nanos, seq)},
        {"namespace", kube::namespace_of(job)}}},
      {"involvedObject",
       {{"apiVersion", job.value("apiVersion", "kubeflow.org/v2beta1")},
        {"kind", job.value("kind", "MPIJob")},
        {"name", kube::name_of(job)},
        {"namespace", kube::namespace_of(job)},
        {"uid", kube::uid_of(job)},
        {"resourceVersion", kube::resource_version_of(job)}}},
      {"reason", e.reason},
      {"message", message},
      {"type", e.type},
      {"source", {{"component", "mpi-operator"}, {"host", host_}}},
      {"reportingComponent", "mpi-operator"},
      {"reportingInstance", host_},
      {"firstTimestamp", ts},
      {"lastTimestamp", ts},
      {"count", 1},
  };
}

void EventRecorder::event(const kube::Object& job, const mpijob::Event& e) {
  const std::string key = kube::object_key(job);
  log_.log(e.type == "Warning" ? LogLevel::Warning : LogLevel::Info, "event",
           {{"mpijob", key}, {"type", e.type}, {"reason", e.reason}, {"message", e.message}});
  try {
    client_.create(kube::resources::kEvents, kube::namespace_of(job), build(job, e, ++seq_));
  } catch (const std::exception& ex) {
    log_.warning("event not recorded", {{"mpijob", key}, {"reason", e.reason},
                                        {"error", ex.what()}});
  }
}

void EventRecorder::count(mpijob::Counter c) {
  switch (c) {
    case mpijob::Counter::JobsCreated: metrics_.jobs_created(); break;
    case mpijob::Counter::JobsSuccessful: metrics_.jobs_successful(); break;
    case mpijob::Counter::JobsFailed: metrics_.jobs_failed(); break;
  }
}

}  // namespace controller
