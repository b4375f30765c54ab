#include "worker_pool.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace korovod::launcher {

WorkerPool::~WorkerPool() {
  for (auto& p : processes_) {
    if (!p->running) continue;
    kill(-p->child.pid, SIGKILL);
    os::wait_group(p->child.pid);
    if (watcher_) watcher_->forget(p->child.pid);
  }
}

Status WorkerPool::start(const WorkerSlot& worker, const ProcessSpec& spec, bool remote) {
  Result<os::Child> child = spawn_process(spec);
  if (!child.is_ok()) return child.status();
  auto p = std::make_unique<Process>(worker, remote, sink_);
  p->child = std::move(child).value();
  if (watcher_) watcher_->watch(p->child.pid);
  processes_.push_back(std::move(p));
  drain_until_.reset();
  return Status::ok();
}

void WorkerPool::stop(const WorkerSlot& worker) {
  const auto now = Clock::now();
  for (auto& p : processes_) {
    if (!p->running || p->worker != worker || p->kill_at) continue;
    if (p->remote) {
      p->child.in.reset();  // end of file for the remote watcher
      p->kill_at = now + options_.grace + SupervisorOptions::kRemoteMargin;
    } else {
      kill(-p->child.pid, SIGTERM);
      p->kill_at = now + options_.grace;
    }
  }
}

void WorkerPool::stop_all() {
  for (auto& p : processes_) stop(p->worker);
}

void WorkerPool::kill_all() {
  for (auto& p : processes_) {
    if (p->running) p->kill_at = Clock::now();
  }
  kill_overdue();
}

bool WorkerPool::any_running() const {
  return std::any_of(processes_.begin(), processes_.end(), [](auto& p) { return p->running; });
}

bool WorkerPool::idle() {
  if (any_running()) return false;
  if (!drain_until_) drain_until_ = Clock::now() + options_.drain;
  const bool open = std::any_of(processes_.begin(), processes_.end(),
                                [](auto& p) { return p->child.out.valid() || p->child.err.valid(); });
  if (open && Clock::now() < *drain_until_) return false;
  for (auto& p : processes_) {
    if (p->child.out.valid()) p->out.finish();
    if (p->child.err.valid()) p->err.finish();
    p->child.out.reset();
    p->child.err.reset();
  }
  return true;
}

int WorkerPool::poll_timeout_ms(std::chrono::milliseconds cap) const {
  auto next = Clock::now() + cap;
  for (const auto& p : processes_) {
    if (p->running && p->kill_at) next = std::min(next, *p->kill_at);
  }
  if (drain_until_) next = std::min(next, *drain_until_);
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(next - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 60'000));
}

WorkerPool::Events WorkerPool::wait(JobSignalFd& signals, std::chrono::milliseconds timeout) {
  Events events;
  std::vector<pollfd> fds{{signals.fd(), POLLIN, 0}};
  std::vector<std::pair<Process*, Stream>> owners{{nullptr, Stream::kStdout}};
  for (auto& p : processes_) {
    if (p->child.out.valid()) {
      fds.push_back({p->child.out.get(), POLLIN, 0});
      owners.push_back({p.get(), Stream::kStdout});
    }
    if (p->child.err.valid()) {
      fds.push_back({p->child.err.get(), POLLIN, 0});
      owners.push_back({p.get(), Stream::kStderr});
    }
  }
  if (::poll(fds.data(), fds.size(), poll_timeout_ms(timeout)) > 0) {
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents != 0) read_output(*owners[i].first, owners[i].second);
    }
  }
  while (std::optional<int> sig = signals.next()) {
    if (*sig != SIGCHLD) events.signals.push_back(*sig);
  }
  reap(events);
  kill_overdue();
  // Finished processes whose output is closed are forgotten.
  std::erase_if(processes_, [](auto& p) { return !p->running && !p->child.out.valid() && !p->child.err.valid(); });
  return events;
}

void WorkerPool::read_output(Process& p, Stream stream) {
  os::Fd& fd = stream == Stream::kStdout ? p.child.out : p.child.err;
  char buf[65536];
  const ssize_t n = ::read(fd.get(), buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {
    (stream == Stream::kStdout ? p.out : p.err).finish();
    fd.reset();
    return;
  }
  (stream == Stream::kStdout ? p.out : p.err).feed(std::string_view(buf, static_cast<size_t>(n)));
}

void WorkerPool::reap(Events& events) {
  for (auto& p : processes_) {
    if (!p->running) continue;
    const std::optional<int> code = os::reap_group_if_ended(p->child.pid);  // and what it left in its group
    if (!code) continue;
    p->running = false;
    if (watcher_) watcher_->forget(p->child.pid);
    p->child.in.reset();
    events.exits.push_back({p->worker, *code});
  }
}

void WorkerPool::kill_overdue() {
  const auto now = Clock::now();
  for (auto& p : processes_) {
    if (p->running && p->kill_at && *p->kill_at <= now) {
      kill(-p->child.pid, SIGKILL);
      p->kill_at.reset();
    }
  }
}

}  // namespace korovod::launcher
