// FakeClock: time that moves only when a test says so (advance()). Waiters blocked in
// wait_until() are woken on every advance, so code under test never really sleeps.
#pragma once

#include <chrono>
#include <cstdint>
#include <condition_variable>
#include <mutex>
#include <set>

#include "kube/clock.h"
#include "kube/mutex.h"

namespace kube {

class FakeClock final : public Clock {
 public:
  // Wall time starts at 2026-01-01T00:00:00Z unless given.
  FakeClock();
  explicit FakeClock(std::chrono::system_clock::time_point wall_start);

  std::chrono::system_clock::time_point now() const override;
  std::chrono::steady_clock::time_point steady_now() const override;
  bool wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                  std::chrono::steady_clock::time_point deadline,
                  const std::function<bool()>& pred) override;

  // Moves both clocks forward and wakes every waiter.
  void advance(std::chrono::nanoseconds d);
  // Threads currently blocked in wait_until (lets tests step only once a thread is parked).
  size_t waiters() const;
  // Blocks (really, up to `real_timeout`) until at least n threads wait on this clock.
  bool wait_for_waiters(size_t n, std::chrono::milliseconds real_timeout = std::chrono::seconds(5));
  // How many wait_until calls have begun so far. A test that advances time can wait for this
  // to grow to know the woken thread finished its step and parked again.
  uint64_t waits_started() const;
  bool wait_for_waits_started(uint64_t n,
                              std::chrono::milliseconds real_timeout = std::chrono::seconds(5));

 private:
  mutable Mutex mu_;
  std::condition_variable waiters_changed_;                 // signalled when waiters_ changes
  std::chrono::system_clock::time_point wall_ KOROVOD_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point steady_ KOROVOD_GUARDED_BY(mu_);
  std::multiset<std::condition_variable*> waiters_ KOROVOD_GUARDED_BY(mu_);
  uint64_t waits_started_ KOROVOD_GUARDED_BY(mu_) = 0;
};

}  // namespace kube
