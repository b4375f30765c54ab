// Time as a seam: everything in operator/ that waits or stamps times takes a kube::Clock&, so
// tests can drive time with FakeClock instead of sleeping.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>

namespace kube {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual std::chrono::system_clock::time_point now() const = 0;  // wall time, for timestamps
  virtual std::chrono::steady_clock::time_point steady_now() const = 0;
  // Waits on cv (with lock held by the caller) until pred() or `deadline` on this clock.
  // Returns pred(). A FakeClock wakes waiters when it is advanced.
  virtual bool wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                          std::chrono::steady_clock::time_point deadline,
                          const std::function<bool()>& pred) = 0;
};

class RealClock final : public Clock {
 public:
  std::chrono::system_clock::time_point now() const override {
    return std::chrono::system_clock::now();
  }
  std::chrono::steady_clock::time_point steady_now() const override {
    return std::chrono::steady_clock::now();
  }
  bool wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                  std::chrono::steady_clock::time_point deadline,
                  const std::function<bool()>& pred) override {
    return cv.wait_until(lock, deadline, pred);
  }
};

// RFC 3339 in UTC with second precision, as Kubernetes metav1.Time serializes ("2026-01-02T03:04:05Z").
std::string format_time(std::chrono::system_clock::time_point t);
// RFC 3339 in UTC with microsecond precision, as metav1.MicroTime serializes
// ("2026-01-02T03:04:05.000000Z"); Lease and Event series times use it.
std::string format_micro_time(std::chrono::system_clock::time_point t);
// Parses RFC 3339 ("Z" or numeric offset, optional fraction); throws std::invalid_argument.
std::chrono::system_clock::time_point parse_time(const std::string& s);

}  // namespace kube
