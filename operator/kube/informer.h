// Informer: runs a Watcher on its own thread and keeps a Store in step with it, calling
// handlers after each change is in the store (as client-go's shared informer does).
//
// Register handlers before start(). Handlers run on the informer thread, one at a time; an
// exception from a handler is reported through WatcherOptions::on_error and swallowed, so one
// bad handler cannot stop the cache. Handlers get ObjectEvents (store.h): the key,
// resourceVersion and owner references read from the store's entry, and object() decoded only
// when a handler asks for it, as the store keeps it (by default without
// metadata.managedFields); a watch deletion's object() is the server's final state. An event
// is valid during the call only. A relist reports new objects as adds, changed ones (different
// resourceVersion) as updates and vanished ones as deletes.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "kube/client.h"
#include "kube/clock.h"
#include "kube/mutex.h"
#include "kube/store.h"
#include "kube/watcher.h"

namespace kube {

struct InformerOptions {
  WatcherOptions watcher;
  StoreOptions store;
};

class Informer {
 public:
  using AddHandler = std::function<void(const ObjectEvent&)>;
  using UpdateHandler = std::function<void(const ObjectEvent& old_obj, const ObjectEvent& new_obj)>;
  using DeleteHandler = std::function<void(const ObjectEvent&)>;

  Informer(Client& client, Resource resource, InformerOptions options, Clock& clock);
  ~Informer();  // stops and joins

  void on_add(AddHandler h);
  void on_update(UpdateHandler h);
  void on_delete(DeleteHandler h);

  void start();  // spawns the thread; once
  void stop();   // stops the watcher and joins the thread; idempotent

  bool has_synced() const;  // the first list is in the store
  // Blocks until synced, stop(), or `timeout` on the informer's clock. Returns has_synced().
  bool wait_for_sync(std::chrono::milliseconds timeout);

  const Store& store() const { return store_; }
  const Resource& resource() const { return resource_; }

 private:
  void run();
  void apply(WatcherEvent ev);
  void dispatch(const Store::Diff& diff);
  void report(const std::exception& e);

  // Constant after construction.
  const Resource resource_;
  Clock& clock_;
  std::function<void(const std::string&)> on_error_;

  Store store_;      // thread-safe itself; written only by the informer thread
  // Hands the watcher's raw list pages to store_ (relists decode straight into entries).
  class StoreSink final : public ListPageSink {
   public:
    StoreSink(Store& store, const Resource& r) : store_(store), resource_(r) {}
    void begin_list() override { store_.begin_relist(resource_); }
    ListResult add_page(std::string_view body) override { return store_.add_relist_page(body); }

   private:
    Store& store_;
    const Resource& resource_;
  };
  StoreSink sink_;
  Watcher watcher_;  // driven only by the informer thread; stop() is thread-safe

  // Set before start(), then read only by the informer thread.
  std::vector<AddHandler> add_handlers_;
  std::vector<UpdateHandler> update_handlers_;
  std::vector<DeleteHandler> delete_handlers_;

  mutable Mutex mu_;
  std::condition_variable synced_cv_;
  bool synced_ KOROVOD_GUARDED_BY(mu_) = false;
  bool stopping_ KOROVOD_GUARDED_BY(mu_) = false;
  std::thread thread_ KOROVOD_GUARDED_BY(mu_);    // for start/stop
};

}  // namespace kube
