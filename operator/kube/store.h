// Store: the informer's thread-safe cache of one resource. One writer (the informer thread),
// many readers (reconcilers), as kube-rs's reflector store: a relist builds a new state and
// swaps it in atomically, reporting objects that vanished as deletions.
//
// Memory is kept modest on purpose (it is benchmarked against client-go): each object is one
// allocation holding its key, resourceVersion, labels, owner references and a MessagePack body
// without what those already say (decoded on read, the object restored exactly);
// metadata.managedFields is dropped by default, and indexes hold pointers to entries. The
// pieces: store_entry.h (the entry), entry_builder.h (the one encoder, for Objects and for list
// pages), store_index.h (the indexes), store_relist.cc (list pages), this file (the API).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kube/client.h"
#include "kube/label_selector.h"
#include "kube/mutex.h"
#include "kube/store_entry.h"

namespace kube {

namespace store_detail {
class EntryBuilder;
class StoreIndex;
}  // namespace store_detail

class Store;

// One object of a change the store reports (Store::Diff, the informer's handlers): its key,
// resourceVersion and owner references come from the entry's header without decoding the
// object; object() decodes it on first use. Valid while the Diff holding it lives, and for a
// new state only until the store's next write (handlers: during the call).
class ObjectEvent {
 public:
  // An event for obj itself (the informer's watch deletions: the server's final state).
  explicit ObjectEvent(const Object& obj);
  ObjectEvent(ObjectEvent&&) noexcept;
  ObjectEvent& operator=(ObjectEvent&&) noexcept;
  ~ObjectEvent();

  std::string_view key() const { return entry_->key(); }  // "ns/name" or "name"
  std::string_view ns() const { return entry_->ns(); }
  std::string_view name() const { return entry_->name(); }
  std::string_view resource_version() const { return entry_->resource_version(); }
  std::vector<OwnerRef> owners() const;
  std::optional<OwnerRef> controller() const;  // the reference with controller: true
  const Object& object() const;

 private:
  friend class Store;
  ObjectEvent(const store_detail::Entry* e, const Store* store) : entry_(e), store_(store) {}

  const store_detail::Entry* entry_;
  const Store* store_ = nullptr;          // decodes entry_; null with given_
  const Object* given_ = nullptr;
  store_detail::EntryPtr header_;         // entry_ when made from given_
  mutable std::optional<Object> decoded_;
};

struct StoreOptions {
  bool strip_managed_fields = true;
  std::function<void(Object&)> transform;  // applied before storing, after stripping; optional
};

class Store {
 public:
  explicit Store(StoreOptions options = {});
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // --- Reads: any thread. Results are copies. ---
  std::optional<Object> get(const std::string& ns, const std::string& name) const;
  std::optional<Object> get_by_key(const std::string& key) const;  // "ns/name" or "name"
  // ns "" = all namespaces; sorted by key.
  std::vector<Object> list(const std::string& ns = "", const LabelSelector& selector = {}) const;
  // Objects with an ownerReference to uid / whose controller ownerReference is uid.
  std::vector<Object> by_owner(const std::string& uid) const;
  std::vector<Object> by_controller(const std::string& uid) const;
  std::vector<std::string> keys() const;
  size_t size() const;
  // Bytes held by entries and indexes (approximate; for the memory benchmark and metrics).
  size_t approx_bytes() const;

  // --- Writes: the single writer. Each reports what changed. ---
  struct Diff {
    std::vector<ObjectEvent> added;
    std::vector<std::pair<ObjectEvent, ObjectEvent>> updated;  // (old, new); same versions skipped
    std::vector<ObjectEvent> deleted;                          // last known state
    Diff();
    Diff(Diff&&) noexcept;
    ~Diff();

   private:
    friend class Store;
    std::unique_ptr<store_detail::StoreIndex> old_;  // holds the old and deleted entries
    store_detail::EntryPtr replaced_;
  };
  // Adds or replaces obj: one added, or one updated (whatever the versions).
  Diff upsert(const Object& obj);
  // Removes obj's key: one deleted (the cached state), or nothing.
  Diff erase(const Object& obj);
  // Atomically replaces the whole content with `objects` (a relist). `swapped` (optional) runs
  // as soon as the new content is visible to readers; with report = false the Diff is empty.
  Diff replace(std::vector<Object> objects, bool report = true,
               const std::function<void()>& swapped = {});

  // --- The informer's relist from raw list pages (Client::list_raw); the writer only. ---
  // Each page's items go straight into entries in one SAX pass over the JSON (store_relist.cc),
  // no Object per item: the same entries replace() makes from the objects RestClient::list
  // returns (kind/apiVersion completed from r as it does). With a transform, pages are parsed
  // into Objects and go the replace() way.
  void begin_relist(const Resource& r);  // also drops the pages of an unfinished relist
  // Decodes one page (the JSON text of a List); returns its resourceVersion and continue token
  // (items stays empty). Throws ApiError (reason "InvalidResponse") for a malformed page,
  // naming what is wrong, e.g. an item without metadata.name.
  ListResult add_relist_page(std::string_view body);
  // Swaps in the pages added since begin_relist, as replace(objects, report, swapped) does.
  Diff commit_relist(bool report, const std::function<void()>& swapped);

 private:
  friend class ObjectEvent;
  using Entry = store_detail::Entry;
  using EntryPtr = store_detail::EntryPtr;
  class PageDecoder;  // store_relist.cc
  // Strips, transforms and encodes obj; the writer only.
  EntryPtr make_entry(const Object& obj);
  // Records the store's TypeMeta on first use (see kind_); true when kind/apiVersion are it.
  bool is_store_type(std::string_view kind, std::string_view api_version);
  // Indexes `made`, swaps it in and reports the changes.
  Diff swap_in(std::vector<EntryPtr> made, bool report, const std::function<void()>& swapped);
  Object decode(const Entry* e) const { return e->decode(kind_, api_version_); }
  std::vector<Object> decode_sorted(std::vector<const Entry*> entries) const;
  std::vector<Object> owned(const std::string& uid, bool controller_only) const;

  const StoreOptions options_;          // constant after construction
  mutable SharedMutex mu_;
  std::unique_ptr<store_detail::StoreIndex> state_ KOROVOD_GUARDED_BY(mu_);
  // The kind/apiVersion of the first typed object stored: entries of that type leave them out
  // of their body. Set once by the writer (under mu_), constant afterwards.
  std::string kind_, api_version_;
  bool type_set_ = false;
  std::unique_ptr<store_detail::EntryBuilder> builder_;  // the writer's; reused for each entry
  // The relist being decoded page by page (writer only).
  Resource relist_resource_;
  std::vector<EntryPtr> relist_;
};

}  // namespace kube
