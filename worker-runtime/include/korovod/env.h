// The runtime's environment as a seam (leveldb's Env): time -- stamps, sleeps and the bounded
// waits every timeout is built on. RuntimeOptions::env hands one to the engine; tests pass a
// fake whose time they move by hand, so a timeout is tested without waiting for it.
// (Files and host identity are read by the transport providers; they are not behind it yet.)
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "korovod/clock.h"

namespace korovod {

class Env : public Clock {
 public:
  // Blocks for `d` of this Env's time.
  virtual void sleep_for(std::chrono::nanoseconds d) = 0;
  // Waits on `cv` (with `lock` held on entry and on return) until it is notified, woken
  // spuriously, or this Env's now() reaches `deadline`. True when the deadline has passed.
  // Callers re-check their condition after every return, as with any condition variable.
  virtual bool wait_until(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                          TimePoint deadline) = 0;
  bool wait_for(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                std::chrono::nanoseconds d) {
    return wait_until(cv, lock, deadline_after(d));
  }
  // now() + d, saturating at TimePoint::max() (a bound of "forever" stays forever).
  TimePoint deadline_after(std::chrono::nanoseconds d) const {
    const TimePoint t = now();
    if (d >= std::chrono::duration_cast<std::chrono::nanoseconds>(TimePoint::max() - t)) return TimePoint::max();
    return t + std::chrono::duration_cast<TimePoint::duration>(d);
  }
};

class SystemEnv final : public Env {
 public:
  TimePoint now() const override { return std::chrono::steady_clock::now(); }
  int64_t wall_micros() const override { return SystemClock().wall_micros(); }
  void sleep_for(std::chrono::nanoseconds d) override { std::this_thread::sleep_for(d); }
  bool wait_until(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                  TimePoint deadline) override {
    if (deadline == TimePoint::max()) {
      cv.wait(lock);
      return false;
    }
    return cv.wait_until(lock, deadline) == std::cv_status::timeout;
  }
};

}  // namespace korovod
