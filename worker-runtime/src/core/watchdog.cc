#include "core/watchdog.h"

namespace korovod {

Watchdog::Watchdog(Env& env, double timeout_seconds, std::function<void()> on_timeout)
    : env_(env),
      timeout_(std::chrono::nanoseconds(static_cast<int64_t>(timeout_seconds * 1e9))),
      on_timeout_(std::move(on_timeout)) {
  if (timeout_seconds > 0) thread_ = std::thread([this] { run(); });
}

Watchdog::~Watchdog() { stop(); }

std::chrono::nanoseconds Watchdog::period() const {
  return std::min<std::chrono::nanoseconds>(timeout_ / 10, std::chrono::milliseconds(100));
}

void Watchdog::stop() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

namespace {
int64_t ns_of(Env::TimePoint t) {
  // Never 0 (which means "not inside a cycle"), whatever the clock's epoch.
  return std::max<int64_t>(1, std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}
}  // namespace

void Watchdog::enter_cycle() { cycle_start_ns_.store(ns_of(env_.now())); }
void Watchdog::leave_cycle() { cycle_start_ns_.store(0); }

void Watchdog::run() {
  MutexLock lock(mu_);
  while (!stop_) {
    env_.wait_for(cv_, lock, period());
    if (stop_) return;
    const int64_t start = cycle_start_ns_.load();
    if (start == 0 || ns_of(env_.now()) - start < timeout_.count()) continue;
    fired_.store(true);
    lock.unlock();
    on_timeout_();
    return;
  }
}

}  // namespace korovod
