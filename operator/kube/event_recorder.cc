#include "kube/event_recorder.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "kube/api_error.h"
#include "kube/object_meta.h"

namespace kube {

namespace {

// Failures that may pass by themselves: no connection or no answer (code 0), a timeout,
// throttling, the API server (or etcd behind it) unavailable.
bool transient(const std::exception& e) {
  const auto* api = dynamic_cast<const ApiError*>(&e);
  if (!api) return false;
  const int c = api->code();
  return c == 0 || c == 408 || c == 429 || c >= 500;
}

}  // namespace

EventRecorder::EventRecorder(Client& client, EventRecorderOptions options, Clock& clock)
    : client_(client), options_(std::move(options)), clock_(clock),
      retrier_([this](std::stop_token stop) { retry_loop(stop); }) {}

EventRecorder::~EventRecorder() {
  retrier_.request_stop();
  {
    MutexLock lock(mu_);
    wake_.notify_all();
  }
  retrier_.join();
  for (const auto& [key, p] : pending_) {
    report("event " + p.event.value("reason", "") + " for " +
           p.event["involvedObject"].value("name", "") + " not recorded: the recorder stopped");
  }
}

void EventRecorder::normal(const Object& involved, const std::string& reason,
                           const std::string& message) {
  record(involved, "Normal", reason, message);
}

void EventRecorder::warning(const Object& involved, const std::string& reason,
                            const std::string& message) {
  record(involved, "Warning", reason, message);
}

void EventRecorder::report(const std::string& what) const {
  if (options_.on_error) options_.on_error(what);
}

Object EventRecorder::new_event(const Object& involved, const std::string& type,
                                const std::string& reason, const std::string& message,
                                const std::string& ns) {
  // Like client-go: <object name>.<hex of the time in ns>, plus a sequence number so two
  // events in the same (fake) instant do not collide.
  const auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         clock_.now().time_since_epoch()).count();
  char suffix[48];
  std::snprintf(suffix, sizeof suffix, ".%llx%llx", static_cast<unsigned long long>(nanos),
                static_cast<unsigned long long>(++sequence_));
  const std::string now = format_time(clock_.now());
  Object ref = {{"apiVersion", involved.value("apiVersion", "")},
                {"kind", involved.value("kind", "")},
                {"name", name_of(involved)},
                {"uid", uid_of(involved)},
                {"resourceVersion", resource_version_of(involved)}};
  if (!namespace_of(involved).empty()) ref["namespace"] = namespace_of(involved);
  return {{"apiVersion", "v1"},
          {"kind", "Event"},
          // Truncated so the Event name stays within the 253-character limit.
          {"metadata", {{"name", name_of(involved).substr(0, 200) + suffix}, {"namespace", ns}}},
          {"involvedObject", ref},
          {"type", type},
          {"reason", reason},
          {"message", message},
          {"count", 1},
          {"firstTimestamp", now},
          {"lastTimestamp", now},
          {"source", {{"component", options_.component}}},
          {"reportingComponent", options_.component},
          {"reportingInstance", options_.instance}};
}

bool EventRecorder::bump(Seen& seen) {
  const Object patch = {{"count", seen.count + 1}, {"lastTimestamp", format_time(clock_.now())}};
  try {
    client_.patch(resources::kEvents, seen.ns, seen.name, PatchType::Merge, patch.dump(), {});
  } catch (const ApiError& e) {
    if (is_not_found(e)) return false;  // expired (events have a TTL): start a new one
    throw;
  }
  ++seen.count;
  return true;
}

void EventRecorder::remember(const std::string& key, const std::string& ns,
                             const std::string& name, int64_t count) {
  if (auto it = seen_.find(key); it != seen_.end()) {  // a retry landed after a newer record
    lru_.erase(it->second.lru);
    seen_.erase(it);
  }
  lru_.push_front(key);
  seen_[key] = Seen{ns, name, count, lru_.begin()};
  while (seen_.size() > options_.cache_size) {
    seen_.erase(lru_.back());
    lru_.pop_back();
  }
}

void EventRecorder::record(const Object& involved, const std::string& type,
                           const std::string& reason, const std::string& message) {
  // Events of cluster-scoped objects go to "default", as kubectl and client-go do.
  const std::string ns = namespace_of(involved).empty() ? "default" : namespace_of(involved);
  const std::string key = involved.value("kind", "") + "\x1f" + ns + "\x1f" +
                          name_of(involved) + "\x1f" + uid_of(involved) + "\x1f" + type +
                          "\x1f" + reason + "\x1f" + message;
  MutexLock lock(mu_);
  if (auto p = pending_.find(key); p != pending_.end()) {
    // Its earlier write is still being retried: that write carries the repeat too.
    ++p->second.count;
    p->second.event["lastTimestamp"] = format_time(clock_.now());
    return;
  }
  Pending write;
  try {
    auto it = seen_.find(key);
    if (it != seen_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second.lru);
      // Should the bump fail for a while: the same Event, with its name (whole, in case it
      // expired meanwhile and must be created again).
      write.event = new_event(involved, type, reason, message, ns);
      write.event["metadata"]["name"] = it->second.name;
      write.exists = true;
      write.count = it->second.count + 1;
      if (bump(it->second)) return;
      lru_.erase(it->second.lru);
      seen_.erase(it);
    }
    write = Pending{};
    write.event = new_event(involved, type, reason, message, ns);
    const Object created = client_.create(resources::kEvents, ns, write.event);
    remember(key, ns, name_of(created));
  } catch (const std::exception& e) {
    if (!transient(e) || options_.max_attempts <= 1) {
      report("recording event " + reason + " for " + name_of(involved) + " failed: " + e.what());
      return;
    }
    defer(key, std::move(write), e);
  }
}

void EventRecorder::defer(const std::string& key, Pending p, const std::exception& why) {
  auto delay = options_.retry_base * (1 << std::min(p.attempts - 1, 16));
  if (delay > options_.retry_max) delay = options_.retry_max;
  p.due = clock_.steady_now() + delay;
  report("recording event " + p.event.value("reason", "") + " for " +
         p.event["involvedObject"].value("name", "") + " failed (attempt " +
         std::to_string(p.attempts) + " of " + std::to_string(options_.max_attempts) +
         ", retrying): " + why.what());
  pending_[key] = std::move(p);
  wake_.notify_all();
}

bool EventRecorder::retry(const std::string& key, Pending& p) {
  const std::string ns = namespace_of(p.event), name = name_of(p.event);
  const Object patch = {{"count", p.count}, {"lastTimestamp", format_time(clock_.now())}};
  try {
    if (!p.exists) {
      Object event = p.event;
      event["count"] = p.count;
      try {
        client_.create(resources::kEvents, ns, event);
        remember(key, ns, name, p.count);
        return true;
      } catch (const ApiError& e) {
        // An earlier attempt landed although its answer was lost: set the count on it.
        if (!is_already_exists(e)) throw;
        p.exists = true;
      }
    }
    client_.patch(resources::kEvents, ns, name, PatchType::Merge, patch.dump(), {});
    remember(key, ns, name, p.count);
    return true;
  } catch (const std::exception& e) {
    ++p.attempts;  // the one that just failed
    if (const auto* api = dynamic_cast<const ApiError*>(&e); api && is_not_found(*api)) {
      p.exists = false;  // expired meanwhile: create it again under the same name
      p.event["count"] = p.count;
    } else if (!transient(e) || p.attempts >= options_.max_attempts) {
      report("recording event " + p.event.value("reason", "") + " for " +
             p.event["involvedObject"].value("name", "") + " failed after " +
             std::to_string(p.attempts) + " attempts: " + e.what());
      return true;
    }
    Pending again = std::move(p);
    defer(key, std::move(again), e);
    return false;
  }
}

void EventRecorder::retry_loop(std::stop_token stop) {
  MutexLock lock(mu_);
  while (!stop.stop_requested()) {
    auto next = std::chrono::steady_clock::time_point::max();
    for (const auto& [key, p] : pending_) next = std::min(next, p.due);
    const size_t waiting = pending_.size();
    if (next == std::chrono::steady_clock::time_point::max()) {
      next = clock_.steady_now() + std::chrono::hours(1);
    }
    clock_.wait_until(lock, wake_, next, [&]() KOROVOD_REQUIRES(mu_) {
      return stop.stop_requested() || pending_.size() != waiting;
    });
    if (stop.stop_requested()) return;
    const auto now = clock_.steady_now();
    std::vector<std::string> due;
    for (const auto& [key, p] : pending_) {
      if (p.due <= now) due.push_back(key);
    }
    for (const auto& key : due) {
      auto node = pending_.extract(key);
      if (node.empty()) continue;
      retry(key, node.mapped());  // re-adds it through defer() when it must wait again
    }
  }
}

}  // namespace kube
