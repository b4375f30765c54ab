#include "kube/watcher.h"

#include "kube/api_error.h"
#include "kube/object_meta.h"

namespace kube {

const char* state_name(Watcher::State s) {
  switch (s) {
    case Watcher::State::Init: return "Init";
    case Watcher::State::Listing: return "Listing";
    case Watcher::State::Listed: return "Listed";
    case Watcher::State::Watching: return "Watching";
    case Watcher::State::Backoff: return "Backoff";
  }
  return "?";
}

Watcher::Watcher(Client& client, Resource resource, WatcherOptions options, Clock& clock)
    : client_(client), resource_(std::move(resource)), options_(std::move(options)),
      clock_(clock), list_rv_(options_.first_list_from_watch_cache ? "0" : ""),
      backoff_(options_.backoff_base, options_.backoff_max) {}

Watcher::~Watcher() { stop(); }

Watcher::State Watcher::state() const {
  MutexLock lock(mu_);
  return state_;
}

std::string Watcher::resource_version() const {
  MutexLock lock(mu_);
  return rv_;
}

void Watcher::stop() {
  stopped_ = true;
  MutexLock lock(mu_);
  if (stream_) stream_->close();
  cv_.notify_all();
}

void Watcher::set_stream(std::unique_ptr<WatchStream> s) {
  MutexLock lock(mu_);
  stream_ = std::move(s);
  if (stream_ && stopped_) stream_->close();  // stop() raced with opening it
}

std::optional<WatcherEvent> Watcher::next() {
  while (!stopped_) {
    try {
      if (auto ev = step()) return ev;
    } catch (const ApiError& e) {
      fail(e.what(), e.code());
    } catch (const std::exception& e) {  // e.g. a malformed response: retry like an API error
      fail(e.what(), 0);
    }
  }
  return std::nullopt;
}

std::optional<WatcherEvent> Watcher::step() {
  State s = state();
  switch (s) {
    case State::Init:
      listed_.clear();
      continue_token_.clear();
      listing_into_sink_ = false;
      if (options_.page_sink) options_.page_sink->begin_list();
      { MutexLock lock(mu_); state_ = State::Listing; }
      return std::nullopt;
    case State::Listing: return list_page();
    case State::Listed: open_watch(); return std::nullopt;
    case State::Watching: return read_watch();
    case State::Backoff: backoff_wait(); return std::nullopt;
  }
  return std::nullopt;
}

std::optional<WatcherEvent> Watcher::list_page() {
  ListOptions opts;
  opts.label_selector = options_.label_selector;
  opts.field_selector = options_.field_selector;
  opts.limit = options_.page_size;
  opts.continue_token = continue_token_;
  // Later pages: the continue token carries the list's resourceVersion (the server refuses both).
  if (continue_token_.empty()) opts.resource_version = list_rv_;
  ListResult page;
  std::optional<std::string> raw;
  // A list is read one way throughout: raw pages from its first page on, or Objects.
  if (options_.page_sink && (continue_token_.empty() || listing_into_sink_))
    raw = client_.list_raw(resource_, options_.ns, opts);
  if (raw) {
    listing_into_sink_ = true;
    page = options_.page_sink->add_page(*raw);
  } else {
    page = client_.list(resource_, options_.ns, opts);
    for (auto& o : page.items) listed_.push_back(std::move(o));
  }
  continue_token_ = page.continue_token;
  if (!continue_token_.empty()) return std::nullopt;  // more pages
  backoff_.forget("");
  {
    MutexLock lock(mu_);
    rv_ = page.resource_version;
    state_ = State::Listed;
  }
  WatcherEvent ev{WatcherEvent::Type::Restarted, std::move(listed_), Object(), listing_into_sink_};
  listed_.clear();
  return ev;
}

void Watcher::open_watch() {
  ListOptions opts;
  opts.label_selector = options_.label_selector;
  opts.field_selector = options_.field_selector;
  opts.resource_version = resource_version();
  opts.allow_watch_bookmarks = true;
  opts.timeout_seconds = options_.watch_timeout_seconds;
  set_stream(client_.watch(resource_, options_.ns, opts));
  MutexLock lock(mu_);
  state_ = State::Watching;
}

std::optional<WatcherEvent> Watcher::read_watch() {
  WatchStream* stream;
  {
    MutexLock lock(mu_);
    stream = stream_.get();
  }
  auto ev = stream->next(options_.poll);
  if (ev) return handle(std::move(*ev));
  if (stream->ended() && !stopped_) {  // the server closed it: resume where we were
    set_stream(nullptr);
    MutexLock lock(mu_);
    state_ = State::Listed;
  }
  return std::nullopt;
}

std::optional<WatcherEvent> Watcher::handle(WatchEvent ev) {
  using T = WatchEvent::Type;
  if (ev.type == T::Error) {
    const ApiError e = from_status(0, ev.object);
    fail(e.what(), e.code());
    return std::nullopt;
  }
  const std::string rv = resource_version_of(ev.object);
  if (!rv.empty()) {
    MutexLock lock(mu_);
    rv_ = rv;
  }
  backoff_.forget("");
  switch (ev.type) {
    case T::Added:
    case T::Modified:
      return WatcherEvent{WatcherEvent::Type::Applied, {}, std::move(ev.object), false};
    case T::Deleted:
      return WatcherEvent{WatcherEvent::Type::Deleted, {}, std::move(ev.object), false};
    default: return std::nullopt;  // Bookmark: only the resourceVersion moves
  }
}

void Watcher::fail(const std::string& what, int code) {
  if (stopped_) return;
  if (options_.on_error) options_.on_error(what);
  const auto delay = backoff_.when("");
  MutexLock lock(mu_);
  if (stream_) stream_->close();
  stream_.reset();
  // 410: the resourceVersion is too old to resume from (or a continue token expired): relist.
  // Otherwise a failed list restarts the list, a failed watch re-watches from rv_.
  const bool gone = code == 410;
  after_backoff_ = gone || state_ == State::Init || state_ == State::Listing || rv_.empty()
                       ? State::Init : State::Listed;
  if (gone) {
    list_rv_.clear();  // the cache may be what is too old: relist consistently, as client-go
    state_ = State::Init;  // relisting right away is what a 410 asks for
    return;
  }
  backoff_until_ = clock_.steady_now() +
                   std::chrono::duration_cast<std::chrono::steady_clock::duration>(delay);
  state_ = State::Backoff;
}

void Watcher::backoff_wait() {
  MutexLock lock(mu_);
  const auto until = backoff_until_;
  clock_.wait_until(lock, cv_, until, [&] { return stopped_.load(); });
  if (!stopped_) state_ = after_backoff_;
}

}  // namespace kube
