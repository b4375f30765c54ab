// EventRecorder: writes core/v1 Events about an involved object, as client-go's recorder does.
// A repeat of the same (object, type, reason, message) bumps count and lastTimestamp on the
// existing Event (a merge patch) instead of creating a new one. Recording never throws into
// the controller: failures go to on_error (e.g. a log line) and are otherwise dropped.
// Calls are synchronous; callers on hot paths should record sparingly.
#pragma once

#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>

#include "kube/client.h"
#include "kube/clock.h"

namespace kube {

struct EventRecorderOptions {
  std::string component;          // source.component / reportingComponent, e.g. "korovod-operator"
  std::string instance;           // reportingInstance, e.g. the pod name; optional
  size_t cache_size = 4096;       // distinct events remembered for aggregation (LRU)
  std::function<void(const std::string&)> on_error;
};

class EventRecorder {
 public:
  EventRecorder(Client& client, EventRecorderOptions options, Clock& clock);

  void normal(const Object& involved, const std::string& reason, const std::string& message);
  void warning(const Object& involved, const std::string& reason, const std::string& message);
  // type: "Normal" or "Warning".
  void record(const Object& involved, const std::string& type, const std::string& reason,
              const std::string& message);

 private:
  struct Seen {
    std::string ns, name;  // of the Event object
    int64_t count = 0;
    std::list<std::string>::iterator lru;
  };
  Object new_event(const Object& involved, const std::string& type, const std::string& reason,
                   const std::string& message, const std::string& ns);
  bool bump(Seen& seen);  // false when the Event is gone and must be recreated
  void remember(const std::string& key, const std::string& ns, const std::string& name);
  void report(const std::string& what) const;

  Client& client_;
  const EventRecorderOptions options_;
  Clock& clock_;

  std::mutex mu_;  // serializes recording: aggregation reads then writes the cache
  std::unordered_map<std::string, Seen> seen_;  // GUARDED_BY(mu_)
  std::list<std::string> lru_;                  // GUARDED_BY(mu_): front = most recent
  uint64_t sequence_ = 0;                       // GUARDED_BY(mu_): keeps event names unique
};

}  // namespace kube
