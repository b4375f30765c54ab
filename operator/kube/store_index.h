// The store's content at one moment: its entries by key, and the indexes (namespace, owner uid,
// label) that hold pointers to them. Internal to the store; not synchronized (Store locks).
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kube/store_entry.h"

namespace kube::store_detail {

class StoreIndex {
 public:
  using Index = std::unordered_map<std::string, std::vector<const Entry*>>;

  StoreIndex() = default;
  StoreIndex(const StoreIndex&) = delete;
  StoreIndex& operator=(const StoreIndex&) = delete;
  ~StoreIndex();  // frees the entries

  // Inserts e, replacing an entry with the same key; returns the replaced one.
  EntryPtr put(EntryPtr e);
  // Removes the entry with this key from every index; returns it (null when absent).
  EntryPtr take(std::string_view key);
  const Entry* find(std::string_view key) const;
  // Gives back the slack of the index vectors (a relist builds them by appending).
  void shrink();

  size_t size() const { return by_key_.size(); }
  template <typename F>
  void for_each(F&& f) const {
    for (const Entry* e : by_key_) f(e);
  }
  const Index& by_ns() const { return by_ns_; }
  const Index& by_owner() const { return by_owner_; }
  const Index& by_label() const { return by_label_; }  // "k=v"
  static std::string label_key(std::string_view k, std::string_view v);
  // Bytes held by the entries and indexes (approximate).
  size_t approx_bytes() const;

 private:
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view k) const { return std::hash<std::string_view>{}(k); }
    size_t operator()(const Entry* e) const { return (*this)(e->key()); }
  };
  struct KeyEq {
    using is_transparent = void;
    static std::string_view k(std::string_view s) { return s; }
    static std::string_view k(const Entry* e) { return e->key(); }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const { return k(a) == k(b); }
  };
  void index(const Entry* e);
  void unindex(const Entry* e);

  // Entries are owned here (freed in the destructor); the indexes hold plain pointers.
  std::unordered_set<Entry*, KeyHash, KeyEq> by_key_;
  Index by_ns_, by_owner_, by_label_;
};

}  // namespace kube::store_detail
