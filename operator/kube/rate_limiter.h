// Rate limiting for API clients and work queues.
//
// TokenBucket limits a stream of requests (the REST client's client-side QPS, the work queue's
// overall rate). ItemRateLimiter decides per-item delays for requeues, as client-go's
// workqueue.RateLimiter does; MaxOf combines several (the controller default is
// MaxOf(ExponentialBackoff(5ms, 1000s), BucketRateLimiter(10 qps, burst 100))).
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "kube/clock.h"
#include "kube/mutex.h"

namespace kube {

// A token bucket: `burst` tokens, refilled at `qps` per second. qps <= 0 means unlimited.
// Thread-safe. Tokens may be borrowed ahead (reserve()), like golang.org/x/time/rate, so
// concurrent waiters are served in order instead of stampeding.
class TokenBucket {
 public:
  TokenBucket(double qps, int burst, Clock& clock);

  // Takes a token if one is available now; never blocks.
  bool try_accept();
  // Takes a token, blocking (on the clock) until it is due.
  void wait();
  // Takes a token now and returns how long the caller must wait before using it (0 if none).
  std::chrono::nanoseconds reserve();

  double qps() const { return qps_; }
  int burst() const { return burst_; }

 private:
  void refill_locked(std::chrono::steady_clock::time_point now) KOROVOD_REQUIRES(mu_);

  // Constant after construction.
  const double qps_;
  const int burst_;
  Clock& clock_;

  Mutex mu_;
  std::condition_variable cv_;  // only used to sleep on the clock in wait()
  double tokens_ KOROVOD_GUARDED_BY(mu_);                                  // may go negative
  std::chrono::steady_clock::time_point last_ KOROVOD_GUARDED_BY(mu_);
};

// Per-item delay policy for requeues. Thread-safe implementations.
class ItemRateLimiter {
 public:
  virtual ~ItemRateLimiter() = default;
  // The delay before `item` should be processed again; counts one more failure for it.
  virtual std::chrono::nanoseconds when(const std::string& item) = 0;
  // Stops tracking `item` (it succeeded).
  virtual void forget(const std::string& item) = 0;
  // How many times `item` was requeued since the last forget.
  virtual int num_requeues(const std::string& item) = 0;
};

// base * 2^failures, capped at max.
class ExponentialBackoff final : public ItemRateLimiter {
 public:
  ExponentialBackoff(std::chrono::nanoseconds base, std::chrono::nanoseconds max);
  std::chrono::nanoseconds when(const std::string& item) override;
  void forget(const std::string& item) override;
  int num_requeues(const std::string& item) override;

 private:
  const std::chrono::nanoseconds base_, max_;
  Mutex mu_;
  std::unordered_map<std::string, int> failures_ KOROVOD_GUARDED_BY(mu_);
};

// Every item shares one TokenBucket: bounds the overall retry rate.
class BucketRateLimiter final : public ItemRateLimiter {
 public:
  BucketRateLimiter(double qps, int burst, Clock& clock) : bucket_(qps, burst, clock) {}
  std::chrono::nanoseconds when(const std::string&) override { return bucket_.reserve(); }
  void forget(const std::string&) override {}
  int num_requeues(const std::string&) override { return 0; }

 private:
  TokenBucket bucket_;
};

// The longest delay of its parts; forget/num_requeues go to all of them.
class MaxOf final : public ItemRateLimiter {
 public:
  explicit MaxOf(std::vector<std::unique_ptr<ItemRateLimiter>> parts);
  std::chrono::nanoseconds when(const std::string& item) override;
  void forget(const std::string& item) override;
  int num_requeues(const std::string& item) override;

 private:
  std::vector<std::unique_ptr<ItemRateLimiter>> parts_;
};

// controller-runtime's default: MaxOf(ExponentialBackoff(5ms, 1000s), Bucket(10 qps, 100)).
std::unique_ptr<ItemRateLimiter> default_controller_rate_limiter(Clock& clock);

}  // namespace kube
