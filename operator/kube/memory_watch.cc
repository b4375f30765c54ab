#include "kube/memory_watch.h"

#include <algorithm>

#include "kube/api_error.h"
#include "kube/object_meta.h"

namespace kube {

MemoryWatchStream::MemoryWatchStream(Clock& clock,
                                     std::optional<std::chrono::steady_clock::time_point> deadline)
    : clock_(clock), deadline_(deadline) {}

bool MemoryWatchStream::past_deadline_locked() const {
  return deadline_ && clock_.steady_now() >= *deadline_;
}

std::optional<WatchEvent> MemoryWatchStream::next(std::chrono::milliseconds timeout) {
  MutexLock lock(mu_);
  const auto until = clock_.steady_now() + timeout;
  clock_.wait_until(lock, cv_, until, [&]() KOROVOD_REQUIRES(mu_) {
    return !queue_.empty() || ended_ || closed_ || past_deadline_locked();
  });
  if (!queue_.empty()) {
    WatchEvent ev = std::move(queue_.front());
    queue_.pop_front();
    return ev;
  }
  if (past_deadline_locked()) ended_ = true;
  return std::nullopt;
}

bool MemoryWatchStream::ended() const {
  MutexLock lock(mu_);
  return (ended_ || closed_ || past_deadline_locked()) && queue_.empty();
}

void MemoryWatchStream::close() {
  MutexLock lock(mu_);
  closed_ = true;
  queue_.clear();
  cv_.notify_all();
}

bool MemoryWatchStream::closed() const {
  MutexLock lock(mu_);
  return closed_ || ended_;
}

void MemoryWatchStream::push(WatchEvent ev) {
  MutexLock lock(mu_);
  if (closed_ || ended_) return;
  queue_.push_back(std::move(ev));
  cv_.notify_all();
}

void MemoryWatchStream::end() {
  MutexLock lock(mu_);
  ended_ = true;
  cv_.notify_all();
}

std::optional<WatchEvent> WatchHub::event_for(const Filter& f, const Change& c) {
  using T = WatchEvent::Type;
  if (c.resource_key != f.resource_key) return std::nullopt;
  if (!f.ns.empty() && namespace_of(c.obj) != f.ns) return std::nullopt;
  auto selected = [&](const Object& o) {
    return f.labels.matches(labels_of(o)) && f.fields.matches(o);
  };
  const bool now = selected(c.obj);
  if (c.type != T::Modified) {
    if (!now) return std::nullopt;
    return WatchEvent{c.type, c.obj};
  }
  // As the API server does: an object entering or leaving the selection is Added / Deleted.
  const bool before = selected(c.old_obj);
  if (now && before) return WatchEvent{T::Modified, c.obj};
  if (now) return WatchEvent{T::Added, c.obj};
  if (before) return WatchEvent{T::Deleted, c.obj};
  return std::nullopt;
}

void WatchHub::add(std::shared_ptr<MemoryWatchStream> stream, Filter filter, int64_t since_rv,
                   const std::vector<Object>& initial) {
  if (since_rv < compacted_rv_) {
    const ApiError gone = gone_error("too old resource version: " + std::to_string(since_rv) +
                                     " (" + std::to_string(compacted_rv_ + 1) + ")");
    stream->push(WatchEvent{WatchEvent::Type::Error, to_status(gone)});
    stream->end();
    return;
  }
  for (const auto& obj : initial) stream->push(WatchEvent{WatchEvent::Type::Added, obj});
  for (const auto& c : history_) {
    if (c.rv <= since_rv) continue;
    if (auto ev = event_for(filter, c)) stream->push(std::move(*ev));
  }
  watchers_.push_back({stream, std::move(filter)});
}

void WatchHub::record(Change change) {
  std::erase_if(watchers_, [](const Registration& r) {
    auto s = r.stream.lock();
    return !s || s->closed();
  });
  for (const auto& w : watchers_) {
    auto stream = w.stream.lock();  // may have been released since the sweep above
    if (!stream) continue;
    if (auto ev = event_for(w.filter, change)) stream->push(std::move(*ev));
  }
  history_.push_back(std::move(change));
  trim();
}

void WatchHub::bookmark(int64_t rv) {
  for (const auto& w : watchers_) {
    if (!w.filter.bookmarks) continue;
    auto s = w.stream.lock();
    if (!s) continue;
    Object obj = {{"apiVersion", w.filter.api_version},
                  {"kind", w.filter.kind},
                  {"metadata", {{"resourceVersion", std::to_string(rv)}}}};
    s->push(WatchEvent{WatchEvent::Type::Bookmark, std::move(obj)});
  }
}

void WatchHub::end_all() {
  for (const auto& w : watchers_)
    if (auto s = w.stream.lock()) s->end();
  watchers_.clear();
}

void WatchHub::set_history_limit(size_t n) {
  history_limit_ = n;
  trim();
}

void WatchHub::trim() {
  while (history_.size() > history_limit_) {
    compacted_rv_ = history_.front().rv;
    history_.pop_front();
  }
}

}  // namespace kube
