// mpijob::Recorder for the operator: events become core/v1 Events on the MPIJob through
// kube::EventRecorder (source component "mpi-operator", as the reference's recorder; repeats
// are aggregated into count), counters go to OperatorMetrics, and events are logged. An event
// whose write fails transiently (API server away, connection cut) is retried in the background
// (kube::EventRecorder); one that cannot be written at all is logged and dropped.
#pragma once

#include <atomic>
#include <string>

#include "controller/metrics.h"
#include "kube/client.h"
#include "kube/clock.h"
#include "kube/event_recorder.h"
#include "controller/log.h"
#include "mpijob/reconciler.h"

namespace controller {

class EventRecorder final : public mpijob::Recorder {
 public:
  EventRecorder(kube::Client& client, OperatorMetrics& metrics, Logger& log,
                kube::Clock& clock, std::string host);

  void event(const kube::Object& mpijob, const mpijob::Event& e) override;
  void count(mpijob::Counter c) override;

 private:
  // Constant after construction.
  OperatorMetrics& metrics_;
  Logger& log_;
  kube::EventRecorder events_;  // thread-safe
};

}  // namespace controller
