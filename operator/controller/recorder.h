// mpijob::Recorder for the operator: events become core/v1 Events on the MPIJob (source
// component "mpi-operator", as the reference's recorder), counters go to OperatorMetrics, and
// both are logged. An event that cannot be written is logged and dropped: events are
// best-effort, as in client-go's broadcaster.
#pragma once

#include <atomic>
#include <string>

#include "controller/log.h"
#include "controller/metrics.h"
#include "kube/client.h"
#include "kube/clock.h"
#include "mpijob/reconciler.h"

namespace controller {

class EventRecorder final : public mpijob::Recorder {
 public:
  EventRecorder(kube::Client& client, OperatorMetrics& metrics, Logger& log, kube::Clock& clock,
                std::string host)
      : client_(client), metrics_(metrics), log_(log), clock_(clock), host_(std::move(host)) {}

  void event(const kube::Object& mpijob, const mpijob::Event& e) override;
  void count(mpijob::Counter c) override;

  // The core/v1 Event written for `e` (exposed for tests).
  kube::Object build(const kube::Object& mpijob, const mpijob::Event& e, uint64_t seq) const;

 private:
  // Constant after construction.
  kube::Client& client_;
  OperatorMetrics& metrics_;
  Logger& log_;
  kube::Clock& clock_;
  const std::string host_;
  std::atomic<uint64_t> seq_{0};
};

}  // namespace controller
