// A timed mutex made of a std::mutex and a std::condition_variable, for the runtime's cycle lock.
// std::timed_mutex would do, but libstdc++ implements its try_lock_until(steady_clock) with
// pthread_mutex_clocklock, which GCC 12's ThreadSanitizer does not intercept: TSan then sees the
// unlock without the lock ("unlock of an unlocked mutex") and misses the happens-before edge the
// lock gives, reporting races on what the lock guards. Every wait here goes through calls TSan
// knows (pthread_mutex_lock, pthread_cond_clockwait). Same contract as std::timed_mutex: lock,
// try_lock, try_lock_until, unlock; not recursive.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace korovod {

class TimedMutex {
 public:
  TimedMutex() = default;
  TimedMutex(const TimedMutex&) = delete;
  TimedMutex& operator=(const TimedMutex&) = delete;

  void lock() {
    std::unique_lock guard(mu_);
    free_.wait(guard, [this] { return !held_; });
    held_ = true;
  }
  bool try_lock() {
    std::lock_guard guard(mu_);
    if (held_) return false;
    held_ = true;
    return true;
  }
  // False once `deadline` passes with the lock still held by another thread.
  template <class Clock, class Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration>& deadline) {
    std::unique_lock guard(mu_);
    if (!free_.wait_until(guard, deadline, [this] { return !held_; })) return false;
    held_ = true;
    return true;
  }
  void unlock() {
    {
      std::lock_guard guard(mu_);
      held_ = false;
    }
    free_.notify_one();
  }

 private:
  std::mutex mu_;
  std::condition_variable free_;  // signalled when held_ goes false
  bool held_ = false;             // guarded by mu_
};

}  // namespace korovod
