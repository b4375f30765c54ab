// The path from a training's rank 0 to MPIJob.status.progress (docs/progress.md, "In the MPIJob
// status"). Every interval the poller reads the tail of each running MPIJob's launcher pod log
// (what mpirun prints: rank 0's `korovod-progress {json}` lines, mpijob/progress.h) and, when the
// last line says something new, merge-patches status.progress. It sets the progress gauges of
// OperatorMetrics. The pods get nothing new: no credential, no endpoint, no write access; what a
// job's pods print reaches only that job's own status, through the operator's own `get
// pods/log`, in bounded form.
//
//   - A launcher pod other than the one status.progress came from (the launcher was recreated:
//     training restarts from scratch) clears the progress until the new one prints a line.
//   - A finished job is read once more (its final line) and then left alone; the progress stays.
//   - The progress lives in the MPIJob, so it survives an operator restart; a new leader reads on.
// Logs come through LauncherLogs: the API server's pods/log in the operator binary, the captured
// output of local pods in local mode.
#pragma once

#include <chrono>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <vector>

#include "controller/log.h"
#include "controller/metrics.h"
#include "kube/client.h"
#include "kube/clock.h"
#include "mpijob/cache.h"

namespace controller {

class LauncherLogs {
 public:
  virtual ~LauncherLogs() = default;
  // The last `lines` lines of a container's log; nullopt when it cannot be read (yet).
  virtual std::optional<std::string> tail(const std::string& ns, const std::string& pod,
                                          const std::string& container, int lines) = 0;
};

struct ProgressOptions {
  std::chrono::milliseconds interval{10'000};  // 0: no progress
  int tail_lines = 200;                        // lines read per launcher and poll
};

class ProgressPoller {
 public:
  ProgressPoller(kube::Client& client, mpijob::Cache& cache, LauncherLogs& logs, OperatorMetrics& metrics,
                 Logger& log, kube::Clock& clock, std::vector<std::string> namespaces, ProgressOptions options);
  // Polls every interval until stop is requested.
  void run(std::stop_token stop);
  // One round over every MPIJob in the watched namespaces.
  void poll_once();

 private:
  void poll_job(const kube::Object& job);

  kube::Client& client_;
  mpijob::Cache& cache_;
  LauncherLogs& logs_;
  OperatorMetrics& metrics_;
  Logger& log_;
  kube::Clock& clock_;
  const std::vector<std::string> namespaces_;  // {""}: all
  const ProgressOptions options_;
  std::set<std::string> final_read_;  // uids of finished jobs whose last line was read
};

}  // namespace controller
