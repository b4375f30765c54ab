// Watcher: list-then-watch over kube::Client as an explicit state machine, after kube-rs's
// watcher.rs:
//
//   Init ──▶ Listing (one page per step) ──▶ Listed ──▶ Watching
//     ▲          │ error                      ▲  │         │ stream ended: resume from the
//     │          ▼                            │  │ error   │ last resourceVersion (Listed)
//     └──── 410 Gone ◀── Backoff ─────────────┘◀─┘◀────────┘ 410 Gone: relist (Init)
//
// It emits Restarted (the full list, after every (re)list), Applied (added or modified) and
// Deleted. Bookmarks only advance the resourceVersion. Errors back off exponentially on the
// injected Clock (so tests drive it with FakeClock), and the backoff resets on success.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kube/client.h"
#include "kube/clock.h"
#include "kube/mutex.h"
#include "kube/rate_limiter.h"

namespace kube {

struct WatcherEvent {
  enum class Type { Restarted, Applied, Deleted };
  Type type = Type::Applied;
  std::vector<Object> objects;  // Restarted: every object that exists now
  Object object;                // Applied / Deleted
  // Restarted: the list's pages went to WatcherOptions::page_sink, not into `objects`.
  bool in_sink = false;
};

// Takes a list's pages as the server sent them (Client::list_raw), for a consumer that decodes
// them straight into its own form (the informer's store) instead of into Objects.
class ListPageSink {
 public:
  virtual ~ListPageSink() = default;
  virtual void begin_list() = 0;  // a list starts (again): drop the pages of an earlier one
  // One page's JSON body; returns its resourceVersion and continue token. Throws when the
  // page is malformed (the watcher then backs off and lists again).
  virtual ListResult add_page(std::string_view body) = 0;
};

struct WatcherOptions {
  std::string ns;  // "" = all namespaces
  std::string label_selector;
  std::string field_selector;
  int64_t page_size = 500;                                 // 0 = unpaged list
  // true: the first list asks for resourceVersion=0, which the API server answers from its watch
  // cache at whatever version the cache has reached (client-go's reflector did this); a relist
  // after 410 Gone then asks for the latest (""). Off by default: such a list can miss objects
  // created just before (the benchmark saw 4,998 of 5,000), and API servers since 1.31 serve
  // the consistent list ("") from the watch cache anyway (ConsistentListFromCache).
  bool first_list_from_watch_cache = false;
  int watch_timeout_seconds = 290;                         // server-side, per watch request
  std::chrono::milliseconds poll{1000};                    // one blocking read of the stream
  std::chrono::milliseconds backoff_base{800};             // kube-rs default backoff
  std::chrono::milliseconds backoff_max{30000};
  std::function<void(const std::string&)> on_error;        // e.g. to log; optional
  // Optional, not owned: with a client that offers list_raw, list pages go here undecoded and
  // Restarted events come with in_sink set and no objects. Other clients: ignored.
  ListPageSink* page_sink = nullptr;
};

class Watcher {
 public:
  enum class State { Init, Listing, Listed, Watching, Backoff };

  Watcher(Client& client, Resource resource, WatcherOptions options, Clock& clock);
  ~Watcher();

  // Steps the state machine until it yields an event; nullopt once stop() was called.
  std::optional<WatcherEvent> next();
  // Thread-safe: makes next() return nullopt soon (closes an open stream, ends a backoff).
  void stop();
  bool stopped() const { return stopped_.load(); }

  State state() const;
  std::string resource_version() const;  // the last one seen; "" before the first list

 private:
  std::optional<WatcherEvent> step();
  std::optional<WatcherEvent> list_page();
  void open_watch();
  std::optional<WatcherEvent> read_watch();
  std::optional<WatcherEvent> handle(WatchEvent ev);
  void fail(const std::string& what, int code);
  void backoff_wait();
  void set_stream(std::unique_ptr<WatchStream> s);

  // Constant after construction.
  Client& client_;
  const Resource resource_;
  const WatcherOptions options_;
  Clock& clock_;

  // Touched only by the thread calling next().
  std::vector<Object> listed_;           // pages accumulated while Listing
  bool listing_into_sink_ = false;      // this list's pages went to options_.page_sink
  std::string continue_token_;
  std::string list_rv_;  // what the first page of the next list asks for: "0" or ""
  State after_backoff_ = State::Init;
  ExponentialBackoff backoff_;

  std::atomic<bool> stopped_{false};
  mutable Mutex mu_;
  std::condition_variable cv_;             // wakes a backoff wait on stop()
  State state_ KOROVOD_GUARDED_BY(mu_) = State::Init;
  std::string rv_ KOROVOD_GUARDED_BY(mu_);
  std::unique_ptr<WatchStream> stream_ KOROVOD_GUARDED_BY(mu_);    // closed by stop()
  std::chrono::steady_clock::time_point backoff_until_ KOROVOD_GUARDED_BY(mu_);
};

const char* state_name(Watcher::State s);

}  // namespace kube
