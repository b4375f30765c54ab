// The last lines each local pod's containers printed, kept in memory: what a kubelet's container
// logs are to the API server's pods/log, for the progress poller of local mode's in-process
// operator (controller/progress_poller.h). Thread-safe: the pod runtime's output threads add,
// the poller reads.
#pragma once

#include <deque>
#include <map>
#include <string>

#include "controller/progress_poller.h"
#include "kube/mutex.h"

namespace local {

class PodLogBook final : public controller::LauncherLogs {
 public:
  explicit PodLogBook(size_t lines_per_container = 1000) : capacity_(lines_per_container) {}
  void add(const std::string& pod, const std::string& container, const std::string& line);
  // The container was restarted: its log starts over, as pods/log shows only the current one.
  void restarted(const std::string& pod, const std::string& container);
  // Local mode runs one namespace: pods are told apart by name.
  std::optional<std::string> tail(const std::string& ns, const std::string& pod, const std::string& container,
                                  int lines) override;

 private:
  const size_t capacity_;
  kube::Mutex mu_;
  std::map<std::string, std::deque<std::string>> lines_ KOROVOD_GUARDED_BY(mu_);  // pod/container -> lines
};

}  // namespace local
