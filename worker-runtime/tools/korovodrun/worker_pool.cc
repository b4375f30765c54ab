#include "worker_pool.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>

namespace korovod::launcher {

WorkerPool::~WorkerPool() {
  for (auto& p : processes_) {
    if (!p->running()) continue;
    p->group->signal(SIGKILL);
    p->group->wait();
    if (watcher_) watcher_->forget(p->group->pid());
  }
}

Status WorkerPool::start(const WorkerSlot& worker, const ProcessSpec& spec, bool remote) {
  Result<os::Child> child = spawn_process(spec);
  if (!child.is_ok()) return child.status();
  auto p = std::make_unique<Process>(worker, remote, sink_);
  p->group.emplace(std::move(child).value());
  if (watcher_) watcher_->watch(p->group->pid());
  processes_.push_back(std::move(p));
  drain_until_.reset();
  return Status::ok();
}

void WorkerPool::stop(const WorkerSlot& worker) {
  const auto now = Clock::now();
  for (auto& p : processes_) {
    if (p->worker != worker) continue;
    if (p->remote) {  // end of file for the remote watcher
      p->group->end(now, options_.grace + SupervisorOptions::kRemoteMargin, os::ProcessGroup::Ask::kCloseStdin);
    } else {
      p->group->end(now, options_.grace);
    }
  }
}

void WorkerPool::stop_all() {
  for (auto& p : processes_) stop(p->worker);
}

void WorkerPool::kill_all() {
  for (auto& p : processes_) p->group->kill_soon(Clock::now());
  kill_overdue();
}

bool WorkerPool::any_running() const {
  return std::any_of(processes_.begin(), processes_.end(), [](auto& p) { return p->running(); });
}

bool WorkerPool::idle() {
  if (any_running()) return false;
  if (!drain_until_) drain_until_ = Clock::now() + options_.drain;
  const bool open = std::any_of(processes_.begin(), processes_.end(), [](auto& p) { return p->output_open(); });
  if (open && Clock::now() < *drain_until_) return false;
  for (auto& p : processes_) p->output.close(*p->group);
  return true;
}

int WorkerPool::poll_timeout_ms(std::chrono::milliseconds cap) const {
  auto next = Clock::now() + cap;
  for (const auto& p : processes_) {
    if (const std::optional<Clock::time_point> kill_at = p->group->kill_deadline()) next = std::min(next, *kill_at);
  }
  if (drain_until_) next = std::min(next, *drain_until_);
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(next - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 60'000));
}

WorkerPool::Events WorkerPool::wait(JobSignalFd& signals, std::chrono::milliseconds timeout) {
  Events events;
  std::vector<WatchedOutput> watched;
  for (auto& p : processes_) watched.push_back({&*p->group, &p->output});
  poll_outputs(signals.fd(), watched, poll_timeout_ms(timeout));
  while (std::optional<int> sig = signals.next()) {
    if (*sig != SIGCHLD) events.signals.push_back(*sig);
  }
  reap(events);
  kill_overdue();
  // Finished processes whose output is closed are forgotten.
  std::erase_if(processes_, [](auto& p) { return !p->running() && !p->output_open(); });
  return events;
}

void WorkerPool::reap(Events& events) {
  for (auto& p : processes_) {
    if (!p->running()) continue;
    const std::optional<int> code = p->group->poll();  // and what it left in its group
    if (!code) continue;
    if (watcher_) watcher_->forget(p->group->pid());
    events.exits.push_back({p->worker, *code});
  }
}

void WorkerPool::kill_overdue() {
  const auto now = Clock::now();
  for (auto& p : processes_) p->group->kill_if_due(now);
}

}  // namespace korovod::launcher
