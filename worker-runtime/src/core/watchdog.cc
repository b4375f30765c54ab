#include "core/watchdog.h"

namespace korovod {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Watchdog::Watchdog(double timeout_seconds, std::function<void()> on_timeout)
    : timeout_(std::chrono::nanoseconds(static_cast<int64_t>(timeout_seconds * 1e9))),
      on_timeout_(std::move(on_timeout)) {
  if (timeout_seconds > 0) thread_ = std::thread([this] { run(); });
}

Watchdog::~Watchdog() { stop(); }

void Watchdog::stop() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Watchdog::enter_cycle() { cycle_start_ns_.store(now_ns()); }
void Watchdog::leave_cycle() { cycle_start_ns_.store(0); }

void Watchdog::run() {
  const auto period = std::min<std::chrono::nanoseconds>(timeout_ / 10, std::chrono::milliseconds(100));
  MutexLock lock(mu_);
  while (!cv_.wait_for(lock, period, [&]() KOROVOD_REQUIRES(mu_) { return stop_; })) {
    int64_t start = cycle_start_ns_.load();
    if (start == 0 || now_ns() - start < timeout_.count()) continue;
    fired_.store(true);
    lock.unlock();
    on_timeout_();
    return;
  }
}

}  // namespace korovod
