#include "kube/store.h"

#include <algorithm>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "kube/object_meta.h"

namespace kube {

// One cached object: its packed form plus what the indexes need, parsed once on insert.
struct Store::Entry {
  std::string key;
  size_t ns_len = 0;  // the namespace is key.substr(0, ns_len): not stored twice
  std::string resource_version;
  std::vector<std::string> owner_uids;
  int controller = -1;  // index into owner_uids of the controller reference, or -1
  std::vector<std::pair<std::string, std::string>> labels;
  std::vector<uint8_t> packed;  // MessagePack of the stored object

  std::string_view ns() const { return std::string_view(key).substr(0, ns_len); }
  Object decode() const { return Object::from_msgpack(packed); }
  const std::string* label(const std::string& k) const {
    for (const auto& [lk, lv] : labels)
      if (lk == k) return &lv;
    return nullptr;
  }
  size_t bytes() const {
    size_t n = sizeof(Entry) + key.capacity() + resource_version.capacity() + packed.capacity();
    for (const auto& u : owner_uids) n += sizeof(u) + u.capacity();
    for (const auto& [k, v] : labels) n += sizeof(k) * 2 + k.capacity() + v.capacity();
    return n;
  }
};

struct Store::State {
  using Index = std::unordered_map<std::string, std::unordered_set<const Entry*>>;
  std::unordered_map<std::string_view, std::unique_ptr<Entry>> by_key;  // views into Entry::key
  Index by_ns, by_owner, by_label;  // label index key: "k=v"

  void index(const Entry* e) {
    by_ns[std::string(e->ns())].insert(e);
    for (const auto& u : e->owner_uids) by_owner[u].insert(e);
    for (const auto& [k, v] : e->labels) by_label[k + "=" + v].insert(e);
  }
  static void drop(Index& idx, const std::string& k, const Entry* e) {
    auto it = idx.find(k);
    if (it == idx.end()) return;
    it->second.erase(e);
    if (it->second.empty()) idx.erase(it);
  }
  void unindex(const Entry* e) {
    drop(by_ns, std::string(e->ns()), e);
    for (const auto& u : e->owner_uids) drop(by_owner, u, e);
    for (const auto& [k, v] : e->labels) drop(by_label, k + "=" + v, e);
  }
  // Inserts e, replacing an entry with the same key; returns the replaced one.
  std::unique_ptr<Entry> put(std::unique_ptr<Entry> e) {
    std::unique_ptr<Entry> old = take(e->key);
    index(e.get());
    const std::string_view k = e->key;
    by_key.emplace(k, std::move(e));
    return old;
  }
  std::unique_ptr<Entry> take(const std::string& key) {
    auto it = by_key.find(key);
    if (it == by_key.end()) return nullptr;
    std::unique_ptr<Entry> e = std::move(it->second);
    by_key.erase(it);
    unindex(e.get());
    return e;
  }
  const Entry* find(const std::string& key) const {
    auto it = by_key.find(key);
    return it == by_key.end() ? nullptr : it->second.get();
  }
};

Store::Store(StoreOptions options)
    : options_(std::move(options)), state_(std::make_unique<State>()) {}

Store::~Store() = default;

std::unique_ptr<Store::Entry> Store::make_entry(Object o) const {
  if (options_.strip_managed_fields && o.contains("metadata") && o["metadata"].is_object())
    o["metadata"].erase("managedFields");
  if (options_.transform) options_.transform(o);
  auto e = std::make_unique<Entry>();
  const std::string ns = namespace_of(o);
  e->key = object_key(ns, name_of(o));
  e->ns_len = ns.size();
  e->resource_version = resource_version_of(o);
  e->owner_uids = owner_uids(o);
  const std::string controller = controller_uid(o);
  for (size_t i = 0; i < e->owner_uids.size() && !controller.empty(); ++i)
    if (e->owner_uids[i] == controller) e->controller = static_cast<int>(i);
  const Object& labels = labels_of(o);
  if (labels.is_object())
    for (const auto& [k, v] : labels.items())
      if (v.is_string()) e->labels.emplace_back(k, v.get<std::string>());
  e->packed = Object::to_msgpack(o);
  e->packed.shrink_to_fit();
  return e;
}

std::vector<Object> Store::decode_sorted(std::vector<const Entry*> entries) {
  std::sort(entries.begin(), entries.end(),
            [](const Entry* a, const Entry* b) { return a->key < b->key; });
  std::vector<Object> out;
  out.reserve(entries.size());
  for (const Entry* e : entries) out.push_back(e->decode());
  return out;
}

std::optional<Object> Store::get(const std::string& ns, const std::string& name) const {
  return get_by_key(object_key(ns, name));
}

std::optional<Object> Store::get_by_key(const std::string& key) const {
  std::shared_lock lock(mu_);
  const Entry* e = state_->find(key);
  if (!e) return std::nullopt;
  return e->decode();
}

std::vector<Object> Store::list(const std::string& ns, const LabelSelector& selector) const {
  std::shared_lock lock(mu_);
  // Start from the smallest index that must contain every match, then filter.
  const std::unordered_set<const Entry*>* candidates = nullptr;
  static const std::unordered_set<const Entry*> kEmpty;  // a constant, not state
  auto narrow = [&](const State::Index& idx, const std::string& k) {
    auto it = idx.find(k);
    const auto* set = it == idx.end() ? &kEmpty : &it->second;
    if (!candidates || set->size() < candidates->size()) candidates = set;
  };
  if (!ns.empty()) narrow(state_->by_ns, ns);
  for (const auto& r : selector.requirements())
    if (r.op == LabelRequirement::Op::Equals || (r.op == LabelRequirement::Op::In && r.values.size() == 1))
      narrow(state_->by_label, r.key + "=" + r.values[0]);
  std::vector<const Entry*> hits;
  auto consider = [&](const Entry* e) {
    if (!ns.empty() && e->ns() != ns) return;
    if (selector.matches_lookup([e](const std::string& k) { return e->label(k); }))
      hits.push_back(e);
  };
  if (candidates) {
    for (const Entry* e : *candidates) consider(e);
  } else {
    for (const auto& [k, e] : state_->by_key) consider(e.get());
  }
  return decode_sorted(std::move(hits));
}

std::vector<Object> Store::owned(const std::string& uid, bool controller_only) const {
  std::shared_lock lock(mu_);
  std::vector<const Entry*> hits;
  auto it = state_->by_owner.find(uid);
  if (it != state_->by_owner.end())
    for (const Entry* e : it->second)
      if (!controller_only || (e->controller >= 0 && e->owner_uids[e->controller] == uid))
        hits.push_back(e);
  return decode_sorted(std::move(hits));
}

std::vector<Object> Store::by_owner(const std::string& uid) const { return owned(uid, false); }
std::vector<Object> Store::by_controller(const std::string& uid) const { return owned(uid, true); }

std::vector<std::string> Store::keys() const {
  std::shared_lock lock(mu_);
  std::vector<std::string> out;
  out.reserve(state_->by_key.size());
  for (const auto& [k, e] : state_->by_key) out.emplace_back(k);
  std::sort(out.begin(), out.end());
  return out;
}

size_t Store::size() const {
  std::shared_lock lock(mu_);
  return state_->by_key.size();
}

size_t Store::approx_bytes() const {
  std::shared_lock lock(mu_);
  // Per hash node: the value, a next pointer and a cached hash, plus a bucket pointer.
  constexpr size_t kNode = 3 * sizeof(void*);
  size_t n = state_->by_key.size() * (sizeof(std::string_view) + sizeof(void*) + kNode);
  for (const auto& [k, e] : state_->by_key) n += e->bytes();
  for (const auto* idx : {&state_->by_ns, &state_->by_owner, &state_->by_label})
    for (const auto& [k, set] : *idx)
      n += sizeof(k) + k.capacity() + kNode + sizeof(set) + set.size() * (sizeof(void*) + kNode);
  return n;
}

std::optional<Object> Store::upsert(const Object& obj) {
  auto e = make_entry(obj);  // the expensive part, outside the lock
  std::unique_lock lock(mu_);
  auto old = state_->put(std::move(e));
  if (!old) return std::nullopt;
  return old->decode();
}

std::optional<Object> Store::erase(const Object& obj) {
  const std::string key = object_key(obj);
  std::unique_lock lock(mu_);
  auto old = state_->take(key);
  if (!old) return std::nullopt;
  return old->decode();
}

Store::Diff Store::replace(const std::vector<Object>& objects) {
  return replace(std::vector<Object>(objects), true, {});
}

Store::Diff Store::replace(std::vector<Object>&& objects) {
  return replace(std::move(objects), true, {});
}

Store::Diff Store::replace(std::vector<Object>&& objects, bool report,
                           const std::function<void()>& swapped) {
  auto next = std::make_unique<State>();
  for (auto& o : objects) next->put(make_entry(std::move(o)));
  objects.clear();
  // Reading the current state needs no lock: this is the only writer. The changes are
  // collected as entries and decoded after the swap, so readers see the new content first.
  std::vector<const Entry*> added, deleted;
  std::vector<std::pair<const Entry*, const Entry*>> updated;
  if (report) {
    for (const auto& [k, e] : next->by_key) {
      const Entry* prev = state_->find(std::string(k));
      if (!prev) added.push_back(e.get());
      else if (prev->resource_version != e->resource_version) updated.emplace_back(prev, e.get());
    }
    for (const auto& [k, e] : state_->by_key)
      if (!next->find(std::string(k))) deleted.push_back(e.get());
  }
  std::unique_ptr<State> old;  // keeps the entries of `updated` and `deleted` alive
  {
    std::unique_lock lock(mu_);
    old = std::exchange(state_, std::move(next));
  }
  if (swapped) swapped();
  // Decoding the new entries without the lock is safe: only this writer changes them.
  Diff diff;
  diff.added.reserve(added.size());
  for (const Entry* e : added) diff.added.push_back(e->decode());
  for (const auto& [p, e] : updated) diff.updated.emplace_back(p->decode(), e->decode());
  for (const Entry* e : deleted) diff.deleted.push_back(e->decode());
  return diff;  // `old` is freed here, outside the lock
}

}  // namespace kube
