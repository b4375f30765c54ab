// Bounds a stuck background cycle. The engine marks the start and end of each cycle; if one
// runs longer than the timeout (a dead or frozen peer never joins the collective), on_timeout
// runs once on the watchdog's thread: it fails every pending operation with an error, so the
// callers return instead of hanging, and may abort the job. Its time is the Env's, so a test
// moves past the timeout by hand.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "core/mutex.h"
#include "korovod/env.h"

namespace korovod {

class Watchdog {
 public:
  // timeout_seconds <= 0: off (no thread). `env` outlives the watchdog.
  Watchdog(Env& env, double timeout_seconds, std::function<void()> on_timeout);
  // How often the thread looks at the cycle in progress: a tenth of the timeout, at most 0.1 s.
  std::chrono::nanoseconds period() const;
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void enter_cycle();
  void leave_cycle();
  bool fired() const { return fired_.load(); }
  void stop();

 private:
  void run();

  Env& env_;
  const std::chrono::nanoseconds timeout_;
  std::function<void()> on_timeout_;
  std::atomic<int64_t> cycle_start_ns_{0};  // env_.now() in ns since its epoch; 0 = not inside a cycle
  std::atomic<bool> fired_{false};
  Mutex mu_;
  std::condition_variable cv_;
  bool stop_ KOROVOD_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace korovod
