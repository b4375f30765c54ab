#include "kube/workqueue.h"

namespace kube {

namespace {
// Longest a getter sleeps with nothing scheduled; it re-checks and sleeps again.
constexpr std::chrono::hours kIdleWait(1);
}  // namespace

WorkQueue::WorkQueue(Clock& clock, std::unique_ptr<ItemRateLimiter> limiter)
    : clock_(clock),
      limiter_(limiter ? std::move(limiter) : default_controller_rate_limiter(clock)) {}

WorkQueue::~WorkQueue() { shut_down(); }

void WorkQueue::add(const std::string& item) {
  MutexLock lock(mu_);
  if (shutting_down_) return;
  add_locked(item);
}

void WorkQueue::add_locked(const std::string& item) {
  if (!dirty_.insert(item).second) return;   // already pending
  if (processing_.count(item)) return;       // queued again by done()
  queue_.push_back(item);
  cv_.notify_all();
}

void WorkQueue::promote_due_locked() {
  const TimePoint now = clock_.steady_now();
  while (!waiting_.empty() && waiting_.begin()->first <= now) {
    const std::string item = waiting_.begin()->second;
    waiting_.erase(waiting_.begin());
    waiting_at_.erase(item);
    add_locked(item);
  }
}

std::optional<std::string> WorkQueue::get() {
  MutexLock lock(mu_);
  while (true) {
    promote_due_locked();
    if (shutting_down_ && !draining_) return std::nullopt;
    if (!queue_.empty()) {
      std::string item = std::move(queue_.front());
      queue_.pop_front();
      processing_.insert(item);
      dirty_.erase(item);
      return item;
    }
    if (shutting_down_) return std::nullopt;  // drained
    const uint64_t seen = schedule_changes_;
    const TimePoint deadline =
        waiting_.empty() ? clock_.steady_now() + kIdleWait : waiting_.begin()->first;
    clock_.wait_until(lock, cv_, deadline, [&]() KOROVOD_REQUIRES(mu_) {
      return !queue_.empty() || shutting_down_ || schedule_changes_ != seen;
    });
  }
}

void WorkQueue::done(const std::string& item) {
  MutexLock lock(mu_);
  processing_.erase(item);
  if (dirty_.count(item)) queue_.push_back(item);
  cv_.notify_all();
}

void WorkQueue::add_rate_limited(const std::string& item) { add_after(item, limiter_->when(item)); }

void WorkQueue::forget(const std::string& item) { limiter_->forget(item); }

int WorkQueue::num_requeues(const std::string& item) { return limiter_->num_requeues(item); }

void WorkQueue::add_after(const std::string& item, std::chrono::nanoseconds delay) {
  MutexLock lock(mu_);
  if (shutting_down_) return;
  if (delay <= std::chrono::nanoseconds(0)) {
    add_locked(item);
    return;
  }
  const TimePoint at =
      clock_.steady_now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(delay);
  auto it = waiting_at_.find(item);
  if (it != waiting_at_.end()) {
    if (it->second <= at) return;  // already due sooner
    auto [first, last] = waiting_.equal_range(it->second);
    for (auto w = first; w != last; ++w)
      if (w->second == item) {
        waiting_.erase(w);
        break;
      }
  }
  waiting_.emplace(at, item);
  waiting_at_[item] = at;
  ++schedule_changes_;
  cv_.notify_all();
}

size_t WorkQueue::len() {
  MutexLock lock(mu_);
  promote_due_locked();
  return queue_.size();
}

size_t WorkQueue::waiting() {
  MutexLock lock(mu_);
  promote_due_locked();
  return waiting_.size();
}

void WorkQueue::shut_down() {
  MutexLock lock(mu_);
  shutting_down_ = true;
  draining_ = false;
  cv_.notify_all();
}

void WorkQueue::shut_down_with_drain() {
  MutexLock lock(mu_);
  shutting_down_ = true;
  draining_ = true;
  waiting_.clear();
  waiting_at_.clear();
  cv_.notify_all();
  while (!(queue_.empty() && processing_.empty()) && draining_)
    clock_.wait_until(lock, cv_, clock_.steady_now() + kIdleWait,
                      [&]() KOROVOD_REQUIRES(mu_) { return (queue_.empty() && processing_.empty()) || !draining_; });
  draining_ = false;
  cv_.notify_all();
}

bool WorkQueue::shutting_down() const {
  MutexLock lock(mu_);
  return shutting_down_;
}

}  // namespace kube
