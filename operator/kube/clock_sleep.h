// Sleeping on a kube::Clock: real time with kube::RealClock, with kube::FakeClock until a test
// advances it past the wake-up time. For loops that poll (a flag set by a signal thread, a
// process's exit) rather than wait for a notification.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "kube/clock.h"
#include "kube/mutex.h"

namespace kube {

inline void sleep_until(Clock& clock, std::chrono::steady_clock::time_point wake) {
  Mutex mu;
  std::condition_variable never_notified;
  MutexLock lock(mu);
  clock.wait_until(lock, never_notified, wake, [] { return false; });
}

inline void sleep_for(Clock& clock, std::chrono::steady_clock::duration d) {
  sleep_until(clock, clock.steady_now() + d);
}

}  // namespace kube
