// An Env whose time moves only when the test says (advance): timeouts are tested without
// waiting for them. Its waits block in real time for at most kPoll and then return as a
// spurious wake-up, so the waiting code re-checks its condition and the fake time; a test
// moves the time and then waits (in real time) for the code to react.
#pragma once

#include <atomic>
#include <chrono>
#include <thread>

#include "korovod/env.h"

namespace korovod::testing {

class FakeEnv final : public Env {
 public:
  static constexpr auto kPoll = std::chrono::milliseconds(1);

  TimePoint now() const override { return TimePoint(std::chrono::nanoseconds(now_ns_.load())); }
  int64_t wall_micros() const override { return 1'800'000'000'000'000 + now_ns_.load() / 1000; }
  void advance(std::chrono::nanoseconds d) { now_ns_.fetch_add(d.count()); }
  // Calls of wait_until so far: a test waits for the code under test to be inside a wait (its
  // deadline taken) before it moves the time.
  int64_t wait_calls() const { return wait_calls_.load(); }
  void await_waiter(int64_t more_than = 0) const {
    while (wait_calls() <= more_than) std::this_thread::sleep_for(kPoll);
  }

  void sleep_for(std::chrono::nanoseconds d) override {
    const TimePoint until = deadline_after(d);
    while (now() < until) std::this_thread::sleep_for(kPoll);
  }
  bool wait_until(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                  TimePoint deadline) override {
    wait_calls_.fetch_add(1);
    if (now() >= deadline) return true;
    cv.wait_for(lock, kPoll);
    return now() >= deadline;
  }

 private:
  std::atomic<int64_t> now_ns_{1'000'000'000};  // 1 s past the epoch: no time point is 0
  std::atomic<int64_t> wait_calls_{0};
};

}  // namespace korovod::testing
