// WorkQueue: controller-runtime's rate-limited work queue contract.
//
//   add(key)                 queue key unless already pending (dedup)
//   get() -> key | nullopt   blocks; nullopt once shut down
//   done(key)                the worker finished; a key re-added while it was being
//                            processed is queued again now (never two workers on one key)
//   add_rate_limited(key)    add after the rate limiter's delay (per-item backoff, max'ed with
//                            an overall token bucket: 5ms..1000s, 10 qps, burst 100)
//   forget(key)              reset the key's backoff (it succeeded)
//   add_after(key, delay)    add later; repeated calls keep the earliest time
//
// Delays run on the injected Clock; there is no timer thread: waiting getters promote due
// items. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "kube/clock.h"
#include "kube/mutex.h"
#include "kube/rate_limiter.h"

namespace kube {

class WorkQueue {
 public:
  // limiter: nullptr = default_controller_rate_limiter(clock).
  explicit WorkQueue(Clock& clock, std::unique_ptr<ItemRateLimiter> limiter = nullptr);
  ~WorkQueue();

  void add(const std::string& item);
  std::optional<std::string> get();
  void done(const std::string& item);

  void add_rate_limited(const std::string& item);
  void forget(const std::string& item);
  int num_requeues(const std::string& item);
  void add_after(const std::string& item, std::chrono::nanoseconds delay);

  size_t len();  // items ready to be handed out (the queue-depth metric)
  size_t waiting();  // items scheduled for later

  // Stops handing out items: every get() returns nullopt, pending items are dropped.
  void shut_down();
  // Stops accepting items, lets workers take what is queued, and returns once every handed
  // out item is done().
  void shut_down_with_drain();
  bool shutting_down() const;

 private:
  using TimePoint = std::chrono::steady_clock::time_point;
  void add_locked(const std::string& item) KOROVOD_REQUIRES(mu_);
  void promote_due_locked() KOROVOD_REQUIRES(mu_);

  Clock& clock_;                                // constant after construction
  const std::unique_ptr<ItemRateLimiter> limiter_;  // thread-safe itself

  mutable Mutex mu_;
  std::condition_variable cv_;                     // queue changed, shutdown, done()
  std::deque<std::string> queue_ KOROVOD_GUARDED_BY(mu_);
  std::unordered_set<std::string> dirty_ KOROVOD_GUARDED_BY(mu_);          // queued or re-added
  std::unordered_set<std::string> processing_ KOROVOD_GUARDED_BY(mu_);     // handed out, not done
  std::multimap<TimePoint, std::string> waiting_ KOROVOD_GUARDED_BY(mu_);  // add_after items
  std::unordered_map<std::string, TimePoint> waiting_at_ KOROVOD_GUARDED_BY(mu_);
  uint64_t schedule_changes_ KOROVOD_GUARDED_BY(mu_) = 0;  // lets getters notice a sooner deadline
  bool shutting_down_ KOROVOD_GUARDED_BY(mu_) = false;
  bool draining_ KOROVOD_GUARDED_BY(mu_) = false;
};

}  // namespace kube
