// A timed mutex made of a std::mutex and a std::condition_variable, for the runtime's cycle lock.
// std::timed_mutex would do, but libstdc++ implements its try_lock_until(steady_clock) with
// pthread_mutex_clocklock, which GCC 12's ThreadSanitizer does not intercept: TSan then sees the
// unlock without the lock ("unlock of an unlocked mutex") and misses the happens-before edge the
// lock gives, reporting races on what the lock guards. Every wait here goes through calls TSan
// knows (pthread_mutex_lock, pthread_cond_clockwait). Same contract as std::timed_mutex: lock,
// try_lock, try_lock_until, unlock; not recursive. A capability for the thread-safety analysis
// (core/thread_annotations.h): members say KOROVOD_GUARDED_BY(a TimedMutex).
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "core/mutex.h"

namespace korovod {

class KOROVOD_CAPABILITY("mutex") TimedMutex {
 public:
  TimedMutex() = default;
  TimedMutex(const TimedMutex&) = delete;
  TimedMutex& operator=(const TimedMutex&) = delete;

  void lock() KOROVOD_ACQUIRE() {
    MutexLock guard(mu_);
    free_.wait(guard, [this]() KOROVOD_REQUIRES(mu_) { return !held_; });
    held_ = true;
  }
  bool try_lock() KOROVOD_TRY_ACQUIRE(true) {
    MutexLock guard(mu_);
    if (held_) return false;
    held_ = true;
    return true;
  }
  // False once `deadline` passes with the lock still held by another thread.
  template <class Clock, class Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration>& deadline) KOROVOD_TRY_ACQUIRE(true) {
    MutexLock guard(mu_);
    if (!free_.wait_until(guard, deadline, [this]() KOROVOD_REQUIRES(mu_) { return !held_; })) return false;
    held_ = true;
    return true;
  }
  void unlock() KOROVOD_RELEASE() {
    {
      MutexLock guard(mu_);
      held_ = false;
    }
    free_.notify_one();
  }

 private:
  Mutex mu_;
  std::condition_variable free_;  // signalled when held_ goes false
  bool held_ KOROVOD_GUARDED_BY(mu_) = false;
};

// std::lock_guard for TimedMutex, known to the analysis: holds it until destruction; with
// std::adopt_lock, takes over a lock the caller already holds (after try_lock_until).
class KOROVOD_SCOPED_CAPABILITY TimedMutexLock {
 public:
  explicit TimedMutexLock(TimedMutex& mu) KOROVOD_ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  TimedMutexLock(TimedMutex& mu, std::adopt_lock_t) KOROVOD_REQUIRES(mu) : mu_(mu) {}
  ~TimedMutexLock() KOROVOD_RELEASE() { mu_.unlock(); }
  TimedMutexLock(const TimedMutexLock&) = delete;
  TimedMutexLock& operator=(const TimedMutexLock&) = delete;

 private:
  TimedMutex& mu_;
};

}  // namespace korovod
