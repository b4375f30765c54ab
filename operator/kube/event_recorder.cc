#include "kube/event_recorder.h"

#include <cstdio>

#include "kube/api_error.h"
#include "kube/object_meta.h"

namespace kube {

EventRecorder::EventRecorder(Client& client, EventRecorderOptions options, Clock& clock)
    : client_(client), options_(std::move(options)), clock_(clock) {}

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
                             const std::string& name) {
  lru_.push_front(key);
  seen_[key] = Seen{ns, name, 1, lru_.begin()};
  while (seen_.size() > options_.cache_size) {
    seen_.erase(lru_.back());
    lru_.pop_back();
  }
}

void EventRecorder::record(const Object& involved, const std::string& type,
                           const std::string& reason, const std::string& message) {
  try {
    // Events of cluster-scoped objects go to "default", as kubectl and client-go do.
    const std::string ns = namespace_of(involved).empty() ? "default" : namespace_of(involved);
    const std::string key = involved.value("kind", "") + "\x1f" + ns + "\x1f" +
                            name_of(involved) + "\x1f" + uid_of(involved) + "\x1f" + type +
                            "\x1f" + reason + "\x1f" + message;
    std::lock_guard lock(mu_);
    auto it = seen_.find(key);
    if (it != seen_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second.lru);
      if (bump(it->second)) return;
      lru_.erase(it->second.lru);
      seen_.erase(it);
    }
    const Object created = client_.create(resources::kEvents, ns,
                                          new_event(involved, type, reason, message, ns));
    remember(key, ns, name_of(created));
  } catch (const std::exception& e) {
    report("recording event " + reason + " for " + name_of(involved) + " failed: " + e.what());
  }
}

}  // namespace kube
