#include "kube/rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace kube {

using std::chrono::nanoseconds;

TokenBucket::TokenBucket(double qps, int burst, Clock& clock)
    : qps_(qps), burst_(std::max(burst, 1)), clock_(clock), tokens_(burst_),
      last_(clock.steady_now()) {}

void TokenBucket::refill_locked(std::chrono::steady_clock::time_point now) {
  if (now <= last_) return;
  const double elapsed = std::chrono::duration<double>(now - last_).count();
  tokens_ = std::min<double>(burst_, tokens_ + elapsed * qps_);
  last_ = now;
}

bool TokenBucket::try_accept() {
  if (qps_ <= 0) return true;
  MutexLock lock(mu_);
  refill_locked(clock_.steady_now());
  if (tokens_ < 1.0) return false;
  tokens_ -= 1.0;
  return true;
}

nanoseconds TokenBucket::reserve() {
  if (qps_ <= 0) return nanoseconds(0);
  MutexLock lock(mu_);
  refill_locked(clock_.steady_now());
  tokens_ -= 1.0;
  if (tokens_ >= 0) return nanoseconds(0);
  return nanoseconds(static_cast<int64_t>(std::ceil(-tokens_ / qps_ * 1e9)));
}

void TokenBucket::wait() {
  const nanoseconds delay = reserve();
  if (delay <= nanoseconds(0)) return;
  const auto deadline =
      clock_.steady_now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(delay);
  MutexLock lock(mu_);
  clock_.wait_until(lock, cv_, deadline, [&] { return clock_.steady_now() >= deadline; });
}

ExponentialBackoff::ExponentialBackoff(nanoseconds base, nanoseconds max) : base_(base), max_(max) {}

nanoseconds ExponentialBackoff::when(const std::string& item) {
  int n;
  {
    MutexLock lock(mu_);
    n = failures_[item]++;
  }
  // Computed in double so large exponents saturate at max instead of overflowing.
  const double delay = static_cast<double>(base_.count()) * std::pow(2.0, n);
  if (delay >= static_cast<double>(max_.count())) return max_;
  return nanoseconds(static_cast<int64_t>(delay));
}

void ExponentialBackoff::forget(const std::string& item) {
  MutexLock lock(mu_);
  failures_.erase(item);
}

int ExponentialBackoff::num_requeues(const std::string& item) {
  MutexLock lock(mu_);
  auto it = failures_.find(item);
  return it == failures_.end() ? 0 : it->second;
}

MaxOf::MaxOf(std::vector<std::unique_ptr<ItemRateLimiter>> parts) : parts_(std::move(parts)) {}

nanoseconds MaxOf::when(const std::string& item) {
  nanoseconds longest(0);
  for (auto& p : parts_) longest = std::max(longest, p->when(item));
  return longest;
}

void MaxOf::forget(const std::string& item) {
  for (auto& p : parts_) p->forget(item);
}

int MaxOf::num_requeues(const std::string& item) {
  int most = 0;
  for (auto& p : parts_) most = std::max(most, p->num_requeues(item));
  return most;
}

std::unique_ptr<ItemRateLimiter> default_controller_rate_limiter(Clock& clock) {
  std::vector<std::unique_ptr<ItemRateLimiter>> parts;
  parts.push_back(std::make_unique<ExponentialBackoff>(std::chrono::milliseconds(5),
                                                       std::chrono::seconds(1000)));
  parts.push_back(std::make_unique<BucketRateLimiter>(10.0, 100, clock));
  return std::make_unique<MaxOf>(std::move(parts));
}

}  // namespace kube
