// Time as a seam: the engine stamps and waits through a Clock so tests can control it.
#pragma once

#include <chrono>
#include <cstdint>

namespace korovod {

class Clock {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
  virtual int64_t wall_micros() const = 0;  // microseconds since the Unix epoch
};

class SystemClock final : public Clock {
 public:
  TimePoint now() const override { return std::chrono::steady_clock::now(); }
  int64_t wall_micros() const override {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

}  // namespace korovod
