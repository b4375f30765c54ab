// Store: the informer's thread-safe cache of one resource. One writer (the informer thread),
// many readers (reconcilers), as kube-rs's reflector store: a relist builds a new state and
// swaps it in atomically, reporting objects that vanished as deletions.
//
// Memory is kept modest on purpose (it is benchmarked against client-go): each object is one
// allocation holding its key, resourceVersion, labels, owner uids and a MessagePack body
// without what those already say (decoded on read, the object restored exactly);
// metadata.managedFields is dropped by default, and indexes hold pointers to entries.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kube/client.h"
#include "kube/label_selector.h"
#include "kube/store_detail.h"

namespace kube {

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

  // --- Writes: the single writer. ---
  // Adds or replaces obj; returns the previous state if there was one.
  std::optional<Object> upsert(const Object& obj);
  // Removes obj's key; returns the previous state if there was one.
  std::optional<Object> erase(const Object& obj);

  struct Diff {
    std::vector<Object> added;
    std::vector<std::pair<Object, Object>> updated;  // (old, new); unchanged versions skipped
    std::vector<Object> deleted;                     // last known state of vanished objects
  };
  // Atomically replaces the whole content with `objects` (a relist).
  Diff replace(const std::vector<Object>& objects);
  Diff replace(std::vector<Object>&& objects);  // no copy of the objects
  // The informer's form: `swapped` (optional) runs as soon as the new content is visible to
  // readers, before the Diff's objects are decoded; with report = false they are not decoded
  // at all and the Diff comes back empty.
  Diff replace(std::vector<Object>&& objects, bool report, const std::function<void()>& swapped);

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
  struct Entry;
  struct EntryBlock;
  struct EntryDeleter {
    void operator()(Entry* e) const;
  };
  using EntryPtr = std::unique_ptr<Entry, EntryDeleter>;
  struct State;
  class PageDecoder;  // store_relist.cc
  // Strips, transforms (in place: `obj` is left stripped) and packs; the writer only.
  EntryPtr make_entry(Object& obj);
  // One allocation holding `parts` (see Entry).
  static EntryPtr build_entry(const store_detail::EntryParts& parts);
  // Records the store's TypeMeta on first use (see kind_); true when kind/apiVersion are it.
  bool is_store_type(std::string_view kind, std::string_view api_version);
  // replace()'s second half: indexes `made`, swaps it in and reports the changes.
  Diff swap_in(std::vector<EntryPtr> made, bool report, const std::function<void()>& swapped);
  // Moves a relist's entries into a few contiguous blocks (see EntryBlock in store.cc).
  static std::vector<EntryPtr> pack_into_blocks(std::vector<EntryPtr> entries);
  Object decode(const Entry* e) const;
  std::vector<Object> decode_sorted(std::vector<const Entry*> entries) const;
  std::vector<Object> owned(const std::string& uid, bool controller_only) const;

  const StoreOptions options_;          // constant after construction
  mutable std::shared_mutex mu_;
  std::unique_ptr<State> state_;        // GUARDED_BY(mu_)
  // The kind/apiVersion of the first typed object stored: entries of that type leave them out
  // of their body. Set once by the writer (under mu_), constant afterwards.
  std::string kind_, api_version_;
  bool type_set_ = false;
  // make_entry's MessagePack buffer, kept between calls (writer only): no allocation per object.
  std::vector<uint8_t> pack_scratch_;
  // The relist being decoded page by page (writer only).
  Resource relist_resource_;
  std::vector<EntryPtr> relist_;
};

}  // namespace kube
