// EventRecorder: writes core/v1 Events about an involved object, as client-go's recorder does.
// A repeat of the same (object, type, reason, message) bumps count and lastTimestamp on the
// existing Event (a merge patch) instead of creating a new one. Recording never throws into
// the controller: failures go to on_error (e.g. a log line).
// A write that fails in a way that may pass (no connection, 408, 429, 5xx: the API server
// restarting, a cut connection) is tried again in the background with backoff, up to
// max_attempts in all, as client-go's recorder does, so a transition is not lost to a blip.
// Retries keep the Event's name: a create whose answer was lost but which landed comes back
// AlreadyExists and is not written twice; a count bump sets an absolute count. Repeats while
// a write is pending raise its count. Other failures (403, 422, ...) are dropped.
// Calls are synchronous; callers on hot paths should record sparingly.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "kube/client.h"
#include "kube/clock.h"
#include "kube/mutex.h"

namespace kube {

struct EventRecorderOptions {
  std::string component;          // source.component / reportingComponent, e.g. "korovod-operator"
  std::string instance;           // reportingInstance, e.g. the pod name; optional
  size_t cache_size = 4096;       // distinct events remembered for aggregation (LRU)
  std::function<void(const std::string&)> on_error;
  int max_attempts = 12;                            // per write, the first one included
  std::chrono::milliseconds retry_base{500};        // backoff doubles from here ...
  std::chrono::milliseconds retry_max{10000};       // ... up to this
};

class EventRecorder {
 public:
  EventRecorder(Client& client, EventRecorderOptions options, Clock& clock);
  ~EventRecorder();  // writes still pending are dropped (and reported)
  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;

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
  // A write that failed transiently: the Event `event` (named) must exist with `count`.
  // `exists`: it was created before, so a retry patches the count instead of creating it.
  struct Pending {
    Object event;
    bool exists = false;
    int64_t count = 1;
    int attempts = 1;
    std::chrono::steady_clock::time_point due;
  };
  Object new_event(const Object& involved, const std::string& type, const std::string& reason,
                   const std::string& message, const std::string& ns) KOROVOD_REQUIRES(mu_);
  bool bump(Seen& seen) KOROVOD_REQUIRES(mu_);  // false when the Event is gone and must be recreated
  void remember(const std::string& key, const std::string& ns, const std::string& name,
                int64_t count = 1) KOROVOD_REQUIRES(mu_);
  void report(const std::string& what) const;
  // The write of one pending entry; true when done (written, or given up on).
  bool retry(const std::string& key, Pending& p) KOROVOD_REQUIRES(mu_);
  void defer(const std::string& key, Pending p, const std::exception& why) KOROVOD_REQUIRES(mu_);
  void retry_loop(std::stop_token stop);

  Client& client_;
  const EventRecorderOptions options_;
  Clock& clock_;

  Mutex mu_;  // serializes recording: aggregation reads then writes the cache
  std::unordered_map<std::string, Seen> seen_ KOROVOD_GUARDED_BY(mu_);
  std::list<std::string> lru_ KOROVOD_GUARDED_BY(mu_);                  // front = most recent
  uint64_t sequence_ KOROVOD_GUARDED_BY(mu_) = 0;                       // keeps event names unique
  std::unordered_map<std::string, Pending> pending_ KOROVOD_GUARDED_BY(mu_);  // by aggregation key
  std::condition_variable wake_;                // pending_ gained an entry, or stop
  std::jthread retrier_;                        // last: started after everything it uses
};

}  // namespace kube
