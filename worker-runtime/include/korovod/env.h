// The runtime's environment as a seam (leveldb's Env): time -- stamps, sleeps and the bounded
// waits every timeout is built on -- and the files the engine writes (timeline, autotune log).
// RuntimeOptions::env hands one to the engine; tests pass a fake whose time they move by hand
// and whose files are strings, so a timeout is tested without waiting for it.
// (Host identity is read by the transport providers; it is not behind it yet.)
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "korovod/clock.h"
#include "korovod/status.h"

namespace korovod {

// A file the engine writes from its start. Errors name the path and the system's reason.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual Status append(std::string_view bytes) = 0;
  // The next append starts `n` bytes before the end, over what was written last (the timeline
  // rewrites its closing "\n]"); n is at most what was written.
  virtual Status back_up(size_t n) = 0;
  virtual Status flush() = 0;  // to the operating system: complete if the job is killed
};

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
  // Creates `path` (truncated if it exists) for writing.
  virtual Result<std::unique_ptr<WritableFile>> new_writable_file(const std::string& path) = 0;
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
  Result<std::unique_ptr<WritableFile>> new_writable_file(const std::string& path) override;  // core/env.cc
};

}  // namespace korovod
