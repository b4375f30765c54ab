#include "os/process_group.h"

#include <signal.h>

#include <cerrno>

#include <utility>

namespace korovod::os {

ProcessGroup::ProcessGroup(ProcessGroup&& other) noexcept
    : child_(std::exchange(other.child_, Child{})),
      exit_code_(other.exit_code_),
      ending_(other.ending_),
      kill_at_(other.kill_at_) {}

ProcessGroup& ProcessGroup::operator=(ProcessGroup&& other) noexcept {
  if (this != &other) {
    if (running()) {
      signal(SIGKILL);
      wait();
    }
    child_ = std::exchange(other.child_, Child{});
    exit_code_ = other.exit_code_;
    ending_ = other.ending_;
    kill_at_ = other.kill_at_;
  }
  return *this;
}

ProcessGroup::~ProcessGroup() {
  if (!running()) return;
  signal(SIGKILL);
  wait();
}

void ProcessGroup::reaped(int code) {
  exit_code_ = code;
  kill_at_.reset();
  child_.in.reset();
}

std::optional<int> ProcessGroup::poll() {
  if (running()) {
    if (std::optional<int> code = reap_group_if_ended(child_.pid)) reaped(*code);
  }
  return exit_code_;
}

int ProcessGroup::wait() {
  if (running()) reaped(wait_group(child_.pid));
  return exit_code_.value_or(1);
}

void ProcessGroup::signal(int signo) {
  if (!running()) return;
  // A child started with new_session may not have called setsid() yet: no group, so the child.
  if (kill(-child_.pid, signo) != 0 && errno == ESRCH) kill(child_.pid, signo);
}

void ProcessGroup::end(TimePoint now, std::chrono::milliseconds grace, Ask ask) {
  if (!running() || ending_) return;
  ending_ = true;
  if (ask == Ask::kCloseStdin) {
    child_.in.reset();  // end of file for whatever watches it
  } else {
    signal(SIGTERM);
  }
  kill_at_ = now + grace;
}

void ProcessGroup::kill_soon(TimePoint now) {
  if (!running()) return;
  ending_ = true;
  kill_at_ = now;
}

bool ProcessGroup::kill_if_due(TimePoint now) {
  if (!running() || !kill_at_ || *kill_at_ > now) return false;
  signal(SIGKILL);
  kill_at_.reset();
  return true;
}

std::optional<ProcessGroup::TimePoint> ProcessGroup::kill_deadline() const {
  if (!running()) return std::nullopt;
  return kill_at_;
}

}  // namespace korovod::os
