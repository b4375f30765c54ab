#include "kube/store_index.h"

#include <algorithm>

namespace kube::store_detail {

namespace {

void drop(StoreIndex::Index& idx, const std::string& k, const Entry* e) {
  auto it = idx.find(k);
  if (it == idx.end()) return;
  auto& v = it->second;
  auto pos = std::find(v.begin(), v.end(), e);
  if (pos != v.end()) {
    *pos = v.back();
    v.pop_back();
  }
  if (v.empty()) idx.erase(it);
}

}  // namespace

StoreIndex::~StoreIndex() {
  for (Entry* e : by_key_) EntryDeleter{}(e);
}

std::string StoreIndex::label_key(std::string_view k, std::string_view v) {
  std::string s;
  s.reserve(k.size() + 1 + v.size());
  s.append(k).append("=").append(v);
  return s;
}

void StoreIndex::index(const Entry* e) {
  by_ns_[std::string(e->ns())].push_back(e);
  e->for_each_owner([&](const OwnerRef& r) { by_owner_[std::string(r.uid)].push_back(e); });
  e->for_each_label(
      [&](std::string_view k, std::string_view v) { by_label_[label_key(k, v)].push_back(e); });
}

void StoreIndex::unindex(const Entry* e) {
  drop(by_ns_, std::string(e->ns()), e);
  e->for_each_owner([&](const OwnerRef& r) { drop(by_owner_, std::string(r.uid), e); });
  e->for_each_label(
      [&](std::string_view k, std::string_view v) { drop(by_label_, label_key(k, v), e); });
}

void StoreIndex::shrink() {
  for (Index* idx : {&by_ns_, &by_owner_, &by_label_})
    for (auto& [k, v] : *idx)
      if (v.capacity() > v.size() + 4) v.shrink_to_fit();
}

EntryPtr StoreIndex::put(EntryPtr e) {
  EntryPtr old = take(e->key());
  index(e.get());
  by_key_.insert(e.release());
  return old;
}

EntryPtr StoreIndex::take(std::string_view key) {
  auto it = by_key_.find(key);
  if (it == by_key_.end()) return nullptr;
  EntryPtr e(*it);
  by_key_.erase(it);
  unindex(e.get());
  return e;
}

const Entry* StoreIndex::find(std::string_view key) const {
  auto it = by_key_.find(key);
  return it == by_key_.end() ? nullptr : *it;
}

size_t StoreIndex::approx_bytes() const {
  // Per hash node: the value, a next pointer and a cached hash, plus a bucket pointer.
  constexpr size_t kNode = 3 * sizeof(void*);
  size_t n = by_key_.size() * (sizeof(void*) + kNode);
  for (const Entry* e : by_key_) n += e->bytes();
  for (const Index* idx : {&by_ns_, &by_owner_, &by_label_})
    for (const auto& [k, v] : *idx)
      n += sizeof(k) + k.capacity() + kNode + sizeof(v) + v.capacity() * sizeof(void*);
  return n;
}

}  // namespace kube::store_detail
