// The runtime's environment as a seam (leveldb's Env): time -- stamps, sleeps and the bounded
// waits every timeout is built on --, the files the engine writes (timeline, autotune log) and
// the host this process runs on (hostname, kernel boot id, whether a process of it is alive).
// The start paths (mpi_runtime_options, tcp_runtime_options) take one, read the host identity
// from it once, hand it to the data planes as the clock of their collective bounds
// (shared-memory waits, the TCP mesh's no-progress bound) and of the TCP transport's setup
// (start timeout, connecting, the job-secret handshake, the rendezvous store, the elastic join),
// and for the shared memory's liveness looks, and to RuntimeOptions::env for the engine; tests
// pass a fake whose time they move by hand, whose files are strings, whose host they name and
// whose processes they declare gone, so a timeout or a dead peer is tested without waiting or
// killing, and several "hosts" run as threads of one process.
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

// The machine a rank runs on. Ranks with equal id() share a kernel, so shared memory between
// them is possible; the boot id tells apart two containers (or UTS namespaces) with one name on
// different machines.
struct HostIdentity {
  std::string hostname;  // gethostname(), "localhost" when it fails
  std::string boot_id;   // /proc/sys/kernel/random/boot_id, "" when unreadable
  std::string id() const { return hostname + "/" + boot_id; }
};

class Env : public Clock {
 public:
  // Read when a start path asks (not cached: a test's UTS namespace may rename the host).
  virtual HostIdentity host() const = 0;
  // Whether process `pid` of this host still runs: not gone, not a zombie (a killed process is
  // one until its parent reaps it). The shared-memory plane's look at the peer it waits for.
  virtual bool process_alive(int pid) const = 0;
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
  // deadline_after for a bound in seconds, as the configuration and the C ABI give them: one too
  // large for the clock (1e300, infinity) is forever; a negative one has passed.
  TimePoint deadline_after_seconds(double seconds) const {
    const double ns = seconds * 1e9;
    if (!(ns < 9e18)) return TimePoint::max();
    return deadline_after(std::chrono::nanoseconds(static_cast<int64_t>(ns > 0 ? ns : 0)));
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
  HostIdentity host() const override;                                                        // core/env.cc
  bool process_alive(int pid) const override;                                                // core/env.cc: /proc
};

}  // namespace korovod
