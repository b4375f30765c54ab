// Bounds a stuck background cycle. The engine marks the start and end of each cycle; if one
// runs longer than the timeout (a dead or frozen peer never joins the collective), on_timeout
// runs once on the watchdog's thread: it fails every pending operation with an error, so the
// callers return instead of hanging, and may abort the job.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "core/mutex.h"

namespace korovod {

class Watchdog {
 public:
  Watchdog(double timeout_seconds, std::function<void()> on_timeout);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void enter_cycle();
  void leave_cycle();
  bool fired() const { return fired_.load(); }
  void stop();

 private:
  void run();

  const std::chrono::nanoseconds timeout_;
  std::function<void()> on_timeout_;
  std::atomic<int64_t> cycle_start_ns_{0};  // 0 = not inside a cycle
  std::atomic<bool> fired_{false};
  Mutex mu_;
  std::condition_variable cv_;
  bool stop_ KOROVOD_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace korovod
