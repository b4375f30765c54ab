#include "kube/informer.h"

#include <stdexcept>


namespace kube {

namespace {

WatcherOptions with_sink(WatcherOptions options, ListPageSink* sink) {
  options.page_sink = sink;
  return options;
}

}  // namespace

Informer::Informer(Client& client, Resource resource, InformerOptions options, Clock& clock)
    : resource_(resource), clock_(clock), on_error_(options.watcher.on_error),
      store_(std::move(options.store)), sink_(store_, resource_),
      watcher_(client, std::move(resource), with_sink(std::move(options.watcher), &sink_),
               clock) {}

Informer::~Informer() { stop(); }

void Informer::on_add(AddHandler h) { add_handlers_.push_back(std::move(h)); }
void Informer::on_update(UpdateHandler h) { update_handlers_.push_back(std::move(h)); }
void Informer::on_delete(DeleteHandler h) { delete_handlers_.push_back(std::move(h)); }

void Informer::start() {
  MutexLock lock(mu_);
  if (thread_.joinable() || stopping_) throw std::logic_error("Informer::start called twice");
  thread_ = std::thread([this] { run(); });
}

void Informer::stop() {
  std::thread t;
  {
    MutexLock lock(mu_);
    stopping_ = true;
    t = std::move(thread_);
    synced_cv_.notify_all();
  }
  watcher_.stop();
  if (t.joinable()) t.join();
}

bool Informer::has_synced() const {
  MutexLock lock(mu_);
  return synced_;
}

bool Informer::wait_for_sync(std::chrono::milliseconds timeout) {
  MutexLock lock(mu_);
  return clock_.wait_until(lock, synced_cv_, clock_.steady_now() + timeout,
                           [&]() KOROVOD_REQUIRES(mu_) { return synced_ || stopping_; }) && synced_;
}

void Informer::run() {
  while (auto ev = watcher_.next()) apply(std::move(*ev));
}

void Informer::report(const std::exception& e) {
  if (on_error_) on_error_(std::string("informer handler for ") + resource_.resource +
                           " threw: " + e.what());
}

void Informer::apply(WatcherEvent ev) {
  switch (ev.type) {
    case WatcherEvent::Type::Restarted: {
      // Synced as soon as the store holds the list; the changes are collected for the handlers
      // after that, and only when there are handlers.
      const bool report =
          !add_handlers_.empty() || !update_handlers_.empty() || !delete_handlers_.empty();
      const auto mark_synced = [this] {
        MutexLock lock(mu_);
        synced_ = true;
        synced_cv_.notify_all();
      };
      dispatch(ev.in_sink ? store_.commit_relist(report, mark_synced)
                          : store_.replace(std::move(ev.objects), report, mark_synced));
      return;
    }
    case WatcherEvent::Type::Applied:
      dispatch(store_.upsert(ev.object));
      return;
    case WatcherEvent::Type::Deleted: {
      store_.erase(ev.object);
      // The event carries the server's final state, newer than the cached one.
      Store::Diff diff;
      diff.deleted.emplace_back(ev.object);
      dispatch(diff);
      return;
    }
  }
}

void Informer::dispatch(const Store::Diff& diff) {
  // Each handler call is guarded alone, so one throwing handler does not starve the others.
  auto guarded = [this](auto&& call) {
    try {
      call();
    } catch (const std::exception& e) {
      report(e);
    }
  };
  for (const auto& e : diff.deleted)
    for (auto& h : delete_handlers_) guarded([&] { h(e); });
  for (const auto& e : diff.added)
    for (auto& h : add_handlers_) guarded([&] { h(e); });
  for (const auto& [old_obj, new_obj] : diff.updated)
    for (auto& h : update_handlers_) guarded([&] { h(old_obj, new_obj); });
}

}  // namespace kube
