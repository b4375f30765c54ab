// Watch support for MemoryClient: the streams it hands out and the hub that records a bounded
// history of changes (for resuming from a resourceVersion) and fans changes out to streams.
// Internal to MemoryClient; the hub is not locked itself, MemoryClient calls it under its mutex.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kube/client.h"
#include "kube/clock.h"
#include "kube/label_selector.h"
#include "kube/mutex.h"

namespace kube {

class MemoryWatchStream final : public WatchStream {
 public:
  // deadline: the server-side timeout (timeoutSeconds), or none.
  MemoryWatchStream(Clock& clock, std::optional<std::chrono::steady_clock::time_point> deadline);
  std::optional<WatchEvent> next(std::chrono::milliseconds timeout) override;
  bool ended() const override;
  void close() override;

  // Server side.
  void push(WatchEvent ev);
  void end();  // the server closes the stream (remaining events are still delivered)
  bool closed() const;

 private:
  bool past_deadline_locked() const;

  Clock& clock_;
  const std::optional<std::chrono::steady_clock::time_point> deadline_;
  mutable Mutex mu_;
  std::condition_variable cv_;
  std::deque<WatchEvent> queue_ KOROVOD_GUARDED_BY(mu_);
  bool ended_ KOROVOD_GUARDED_BY(mu_) = false;
  bool closed_ KOROVOD_GUARDED_BY(mu_) = false;           // closed by the client
};

// One change to one object, as recorded for watchers.
struct Change {
  int64_t rv = 0;
  std::string resource_key;   // group/resource
  WatchEvent::Type type = WatchEvent::Type::Added;
  Object old_obj;             // Modified: the previous state (for selector transitions)
  Object obj;
};

class WatchHub {
 public:
  explicit WatchHub(size_t history_limit) : history_limit_(history_limit) {}

  struct Filter {
    std::string resource_key;
    std::string ns;  // "" = all
    LabelSelector labels;
    FieldSelector fields;
    bool bookmarks = false;
    std::string api_version, kind;  // for bookmark objects
  };

  // Registers a stream that first receives `initial` (synthetic Added events) and then every
  // recorded change after `since_rv`. Ends it at once with a 410 Error event when history
  // after since_rv was already discarded.
  void add(std::shared_ptr<MemoryWatchStream> stream, Filter filter, int64_t since_rv,
           const std::vector<Object>& initial);
  void record(Change change);          // appends to the history and fans out
  void bookmark(int64_t rv);  // a Bookmark event to every stream that allowed them
  void end_all();                       // server closes every stream
  void set_history_limit(size_t n);
  int64_t oldest_resumable_rv() const { return compacted_rv_; }

 private:
  struct Registration {
    std::weak_ptr<MemoryWatchStream> stream;
    Filter filter;
  };
  static std::optional<WatchEvent> event_for(const Filter& f, const Change& c);
  void trim();

  size_t history_limit_;
  std::deque<Change> history_;
  int64_t compacted_rv_ = 0;  // changes with rv <= this are gone from history
  std::vector<Registration> watchers_;
};

}  // namespace kube
