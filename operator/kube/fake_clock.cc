#include "kube/fake_clock.h"

namespace kube {

namespace {
// 2026-01-01T00:00:00Z: a fixed, recognisable start so timestamps in tests are stable.
constexpr std::chrono::seconds kDefaultWallStart(1767225600);
// A waiter can miss the notify of an advance() that lands between its time check and its
// cv wait (the caller's mutex is not ours); re-checking this often bounds that delay.
constexpr std::chrono::milliseconds kRecheck(2);
}  // namespace

FakeClock::FakeClock() : FakeClock(std::chrono::system_clock::time_point(kDefaultWallStart)) {}

FakeClock::FakeClock(std::chrono::system_clock::time_point wall_start)
    : wall_(wall_start), steady_(std::chrono::steady_clock::time_point(std::chrono::hours(1))) {}

std::chrono::system_clock::time_point FakeClock::now() const {
  MutexLock lock(mu_);
  return wall_;
}

std::chrono::steady_clock::time_point FakeClock::steady_now() const {
  MutexLock lock(mu_);
  return steady_;
}

bool FakeClock::wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                           std::chrono::steady_clock::time_point deadline,
                           const std::function<bool()>& pred) {
  {
    MutexLock g(mu_);
    waiters_.insert(&cv);
    ++waits_started_;
  }
  waiters_changed_.notify_all();
  bool result;
  while (true) {
    if (pred()) {
      result = true;
      break;
    }
    if (steady_now() >= deadline) {
      result = pred();
      break;
    }
    cv.wait_for(lock, kRecheck);
  }
  {
    MutexLock g(mu_);
    waiters_.erase(waiters_.find(&cv));
  }
  waiters_changed_.notify_all();
  return result;
}

void FakeClock::advance(std::chrono::nanoseconds d) {
  MutexLock lock(mu_);
  wall_ += std::chrono::duration_cast<std::chrono::system_clock::duration>(d);
  steady_ += std::chrono::duration_cast<std::chrono::steady_clock::duration>(d);
  // Notified under mu_: a waiter unregisters under mu_ too, so its cv is alive here.
  for (auto* cv : waiters_) cv->notify_all();
}

size_t FakeClock::waiters() const {
  MutexLock lock(mu_);
  return waiters_.size();
}

bool FakeClock::wait_for_waiters(size_t n, std::chrono::milliseconds real_timeout) {
  MutexLock lock(mu_);
  return waiters_changed_.wait_for(lock, real_timeout, [&]() KOROVOD_REQUIRES(mu_) { return waiters_.size() >= n; });
}

uint64_t FakeClock::waits_started() const {
  MutexLock lock(mu_);
  return waits_started_;
}

bool FakeClock::wait_for_waits_started(uint64_t n, std::chrono::milliseconds real_timeout) {
  MutexLock lock(mu_);
  return waiters_changed_.wait_for(lock, real_timeout, [&]() KOROVOD_REQUIRES(mu_) { return waits_started_ >= n; });
}

}  // namespace kube
