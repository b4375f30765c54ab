#include "controller/recorder.h"

#include "kube/object_meta.h"
#include "mpijob/types.h"

namespace controller {
namespace {

kube::EventRecorderOptions recorder_options(Logger& log, std::string host) {
  kube::EventRecorderOptions o;
  o.component = "mpi-operator";
  o.instance = std::move(host);
  // Also each failed attempt of a write that is tried again: the log shows the outage.
  o.on_error = [&log](const std::string& e) { log.warning("event not recorded", {{"error", e}}); };
  return o;
}

}  // namespace

EventRecorder::EventRecorder(kube::Client& client, OperatorMetrics& metrics, Logger& log,
                             kube::Clock& clock, std::string host)
    : metrics_(metrics), log_(log),
      events_(client,
              recorder_options(log, std::move(host)),
              clock) {}

void EventRecorder::event(const kube::Object& job, const mpijob::Event& e) {
  log_.log(e.type == "Warning" ? LogLevel::Warning : LogLevel::Info, "event",
           {{"mpijob", kube::object_key(job)}, {"type", e.type}, {"reason", e.reason},
            {"message", e.message}});
  // Objects from a list may lack apiVersion/kind; the Event's involvedObject needs them.
  kube::Object involved = job;
  if (!involved.contains("apiVersion")) involved["apiVersion"] = mpijob::kApiVersion;
  if (!involved.contains("kind")) involved["kind"] = mpijob::kKind;
  events_.record(involved, e.type, e.reason,
                 e.message.size() > 1024 ? e.message.substr(0, 1024) : e.message);
}

void EventRecorder::count(mpijob::Counter c) {
  switch (c) {
    case mpijob::Counter::JobsCreated: metrics_.jobs_created(); break;
    case mpijob::Counter::JobsSuccessful: metrics_.jobs_successful(); break;
    case mpijob::Counter::JobsFailed: metrics_.jobs_failed(); break;
  }
}

}  // namespace controller
