#include "kube/store.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <new>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>

#include "kube/object_meta.h"

namespace kube {

namespace store_detail {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

bool pack_uid(std::string_view s, uint8_t* out) {
  if (s.size() != 36) return false;
  size_t n = 0;
  for (size_t i = 0; i < s.size();) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (s[i] != '-') return false;
      ++i;
      continue;
    }
    const int hi = hex_value(s[i]), lo = hex_value(s[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[n++] = static_cast<uint8_t>(hi << 4 | lo);
    i += 2;
  }
  return n == kUidBytes;
}

int32_t pack_owners(const std::vector<std::string>& owners, std::string_view controller, std::string& blob) {
  blob.clear();
  int32_t index = -1;
  for (size_t i = 0; i < owners.size(); ++i) {
    if (!controller.empty() && index < 0 && owners[i] == controller) index = static_cast<int32_t>(i);
    blob.append(owners[i]).push_back('\0');
  }
  return index;
}

}  // namespace store_detail

namespace {

enum EntryFlags : uint32_t {
  kName = 1,     // metadata.name was a string: left out of the body, restored from the key
  kNs = 2,       // metadata.namespace likewise
  kRv = 4,       // metadata.resourceVersion: restored from the entry
  kTyped = 8,    // kind/apiVersion were the store's TypeMeta: restored from it
  kUid = 16,     // metadata.uid was a canonical UUID: 16 bytes after the owner uids
};

using store_detail::kUidBytes;
using store_detail::pack_uid;

std::string unpack_uid(const uint8_t* in) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  s.reserve(36);
  for (size_t i = 0; i < kUidBytes; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s.push_back('-');
    s.push_back(kHex[in[i] >> 4]);
    s.push_back(kHex[in[i] & 15]);
  }
  return s;
}

// Removes metadata[field] when it is a string; returns whether it did.
bool take_meta_string(Object& obj, const char* field) {
  auto m = obj.find("metadata");
  if (m == obj.end() || !m->is_object()) return false;
  auto f = m->find(field);
  if (f == m->end() || !f->is_string()) return false;
  m->erase(f);
  return true;
}

}  // namespace

// One cached object in one allocation: this header, then the key ("ns/name"), the
// resourceVersion, the labels ("k\0v\0" pairs), the owner uids ("uid\0" each) and the
// MessagePack body. The body leaves out what the header or the store already say (name,
// namespace, resourceVersion, and kind/apiVersion when they are the store's); decode() puts
// them back, so objects read back exactly as stored.
struct Store::Entry {
  EntryBlock* block = nullptr;  // the relist block holding this entry, or null: its own allocation
  uint32_t key_len = 0, ns_len = 0, rv_len = 0, labels_len = 0, owners_len = 0, packed_len = 0;
  int32_t controller = -1;  // index of the controller reference among the owner uids, or -1
  uint32_t flags = 0;

  const char* data() const { return reinterpret_cast<const char*>(this + 1); }
  std::string_view key() const { return {data(), key_len}; }
  std::string_view ns() const { return key().substr(0, ns_len); }
  std::string_view name() const { return ns_len == 0 ? key() : key().substr(ns_len + 1); }
  std::string_view resource_version() const { return {data() + key_len, rv_len}; }
  std::string_view labels_blob() const { return {data() + key_len + rv_len, labels_len}; }
  std::string_view owners_blob() const {
    return {data() + key_len + rv_len + labels_len, owners_len};
  }
  const uint8_t* uid() const {
    return reinterpret_cast<const uint8_t*>(data() + key_len + rv_len + labels_len + owners_len);
  }
  size_t uid_len() const { return (flags & kUid) ? kUidBytes : 0; }
  const uint8_t* packed() const { return uid() + uid_len(); }
  size_t bytes() const {
    return sizeof(Entry) + key_len + rv_len + labels_len + owners_len + uid_len() + packed_len;
  }

  // f(key, value) for each label.
  template <typename F>
  void for_each_label(F&& f) const {
    std::string_view b = labels_blob();
    while (!b.empty()) {
      const size_t k = b.find('\0');
      const size_t v = b.find('\0', k + 1);
      f(b.substr(0, k), b.substr(k + 1, v - k - 1));
      b.remove_prefix(v + 1);
    }
  }
  std::optional<std::string_view> label(std::string_view key) const {
    std::optional<std::string_view> out;
    for_each_label([&](std::string_view k, std::string_view v) {
      if (!out && k == key) out = v;
    });
    return out;
  }
  // f(uid, index) for each owner reference.
  template <typename F>
  void for_each_owner(F&& f) const {
    std::string_view b = owners_blob();
    for (int i = 0; !b.empty(); ++i) {
      const size_t end = b.find('\0');
      f(b.substr(0, end), i);
      b.remove_prefix(end + 1);
    }
  }
  bool controlled_by(std::string_view uid) const {
    bool hit = false;
    for_each_owner([&](std::string_view u, int i) { hit = hit || (i == controller && u == uid); });
    return hit;
  }

  Object decode(const std::string& kind, const std::string& api_version) const {
    Object o = Object::from_msgpack(packed(), packed() + packed_len);
    if (flags & kTyped) {
      o["kind"] = kind;
      o["apiVersion"] = api_version;
    }
    if (flags & (kName | kNs | kRv | kUid)) {
      Object& m = o["metadata"];
      if (flags & kUid) m["uid"] = unpack_uid(uid());
      if (flags & kName) m["name"] = std::string(name());
      if (flags & kNs) m["namespace"] = std::string(ns());
      if (flags & kRv) m["resourceVersion"] = std::string(resource_version());
    }
    return o;
  }
};

// The entries of one relist, packed back to back in one allocation of at most kBytes (or one
// larger entry), freed with its last entry. Why: a relist's entries are packed while the listed
// objects still exist, and malloc places them in the holes between those objects; freeing the
// objects then leaves every entry alone on its own few pages, and the process keeps ~4x the
// cache's size resident (the heap is fine, RSS is not). Copied into blocks allocated before the
// list is freed, the entries sit together and the list's pages go back to the system.
// A block is kept while any of its entries lives: at worst as much as the relist packed.
// alignas: the entries start right after this header (base()) and need Entry's alignment; a
// 4-byte header put every packed entry at a misaligned address (UB that UBSan reports).
struct alignas(16) Store::EntryBlock {
  static constexpr size_t kBytes = 256 * 1024;
  std::atomic<uint32_t> live{0};
  char* base() { return reinterpret_cast<char*>(this + 1); }
};

namespace {
constexpr size_t entry_align(size_t n) { return (n + 15) & ~size_t{15}; }
}  // namespace

void Store::EntryDeleter::operator()(Entry* e) const {
  EntryBlock* block = e->block;
  e->~Entry();
  if (!block) {
    ::operator delete(e);
  } else if (block->live.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    block->~EntryBlock();
    ::operator delete(block);
  }
}

std::vector<Store::EntryPtr> Store::pack_into_blocks(std::vector<EntryPtr> entries) {
  static_assert(std::is_trivially_copyable_v<Entry>, "entries are copied bytewise");
  static_assert(sizeof(EntryBlock) % alignof(Entry) == 0 && entry_align(1) % alignof(Entry) == 0,
                "entries packed after the block header must stay aligned");
  static_assert(alignof(EntryBlock) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__,
                "::operator new(size) must return memory aligned for the block");
  std::vector<EntryPtr> out;
  out.reserve(entries.size());
  for (size_t i = 0; i < entries.size();) {
    size_t bytes = 0, j = i;
    while (j < entries.size() &&
           (j == i || bytes + entry_align(entries[j]->bytes()) <= EntryBlock::kBytes))
      bytes += entry_align(entries[j++]->bytes());
    void* mem = ::operator new(sizeof(EntryBlock) + bytes);
    auto* block = new (mem) EntryBlock();
    block->live.store(static_cast<uint32_t>(j - i), std::memory_order_relaxed);
    char* p = block->base();
    for (; i < j; ++i) {
      // Entry is a header of plain fields followed by its bytes: a byte copy is a valid copy.
      const size_t n = entries[i]->bytes();
      std::memcpy(static_cast<void*>(p), entries[i].get(), n);
      Entry* e = reinterpret_cast<Entry*>(p);
      e->block = block;
      out.emplace_back(e);
      entries[i].reset();
      p += entry_align(n);
    }
  }
  return out;
}

struct Store::State {
  using EntryPtr = Store::EntryPtr;
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
  // Entries are owned here (freed in ~State); the indexes hold plain vectors of pointers.
  std::unordered_set<Entry*, KeyHash, KeyEq> by_key;
  using Index = std::unordered_map<std::string, std::vector<const Entry*>>;
  Index by_ns, by_owner, by_label;  // label index key: "k=v"

  State() = default;
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  ~State() {
    for (Entry* e : by_key) EntryDeleter{}(e);
  }

  static std::string label_key(std::string_view k, std::string_view v) {
    std::string s;
    s.reserve(k.size() + 1 + v.size());
    s.append(k).append("=").append(v);
    return s;
  }
  void index(const Entry* e) {
    by_ns[std::string(e->ns())].push_back(e);
    e->for_each_owner([&](std::string_view u, int) { by_owner[std::string(u)].push_back(e); });
    e->for_each_label(
        [&](std::string_view k, std::string_view v) { by_label[label_key(k, v)].push_back(e); });
  }
  static void drop(Index& idx, const std::string& k, const Entry* e) {
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
  void unindex(const Entry* e) {
    drop(by_ns, std::string(e->ns()), e);
    e->for_each_owner([&](std::string_view u, int) { drop(by_owner, std::string(u), e); });
    e->for_each_label(
        [&](std::string_view k, std::string_view v) { drop(by_label, label_key(k, v), e); });
  }
  // Gives back the slack of the index vectors (a relist builds them by appending).
  void shrink() {
    for (Index* idx : {&by_ns, &by_owner, &by_label})
      for (auto& [k, v] : *idx)
        if (v.capacity() > v.size() + 4) v.shrink_to_fit();
  }
  // Inserts e, replacing an entry with the same key; returns the replaced one.
  EntryPtr put(EntryPtr e) {
    EntryPtr old = take(e->key());
    index(e.get());
    by_key.insert(e.release());
    return old;
  }
  EntryPtr take(std::string_view key) {
    auto it = by_key.find(key);
    if (it == by_key.end()) return nullptr;
    EntryPtr e(*it);
    by_key.erase(it);
    unindex(e.get());
    return e;
  }
  const Entry* find(std::string_view key) const {
    auto it = by_key.find(key);
    return it == by_key.end() ? nullptr : *it;
  }
};

Store::Store(StoreOptions options)
    : options_(std::move(options)), state_(std::make_unique<State>()) {}

Store::~Store() = default;

Store::EntryPtr Store::make_entry(Object& o) {
  if (options_.strip_managed_fields && o.contains("metadata") && o["metadata"].is_object())
    o["metadata"].erase("managedFields");
  if (options_.transform) options_.transform(o);
  const std::string ns = namespace_of(o);
  const std::string key = object_key(ns, name_of(o));
  const std::string rv = resource_version_of(o);
  const std::vector<std::string> owners = owner_uids(o);
  const std::string controller = controller_uid(o);
  std::string labels;
  if (const Object& l = labels_of(o); l.is_object())
    for (const auto& [k, v] : l.items())
      if (v.is_string() && k.find('\0') == std::string::npos) {
        const auto& s = v.get_ref<const std::string&>();
        if (s.find('\0') != std::string::npos) continue;  // not a valid label; never indexed
        labels.append(k).push_back('\0');
        labels.append(s).push_back('\0');
      }
  std::string owner_blob;
  const int32_t controller_index = store_detail::pack_owners(owners, controller, owner_blob);

  store_detail::EntryParts parts;
  parts.key = key;
  parts.ns_len = ns.size();
  parts.resource_version = rv;
  parts.labels = labels;
  parts.owners = owner_blob;
  parts.controller = controller_index;
  parts.name_taken = take_meta_string(o, "name");
  parts.ns_taken = !ns.empty() && take_meta_string(o, "namespace");
  parts.rv_taken = take_meta_string(o, "resourceVersion");
  uint8_t uid_bytes[kUidBytes];
  if (pack_uid(uid_of(o), uid_bytes) && take_meta_string(o, "uid")) parts.uid = uid_bytes;
  auto k = o.find("kind");
  auto a = o.find("apiVersion");
  if (k != o.end() && a != o.end() && k->is_string() && a->is_string() &&
      is_store_type(k->get_ref<const std::string&>(), a->get_ref<const std::string&>())) {
    o.erase("kind");
    o.erase("apiVersion");
    parts.typed = true;
  }
  std::vector<uint8_t>& packed = pack_scratch_;
  packed.clear();
  Object::to_msgpack(o, packed);
  parts.packed = {reinterpret_cast<const char*>(packed.data()), packed.size()};
  return build_entry(parts);
}

bool Store::is_store_type(std::string_view kind, std::string_view api_version) {
  if (!type_set_) {
    // Set once, before any entry that relies on it is visible to readers.
    std::unique_lock lock(mu_);
    kind_ = kind;
    api_version_ = api_version;
    type_set_ = true;
  }
  return kind == kind_ && api_version == api_version_;
}

Store::EntryPtr Store::build_entry(const store_detail::EntryParts& parts) {
  uint32_t flags = 0;
  if (parts.name_taken) flags |= kName;
  if (parts.ns_taken) flags |= kNs;
  if (parts.rv_taken) flags |= kRv;
  if (parts.typed) flags |= kTyped;
  if (parts.uid) flags |= kUid;
  const size_t uid_len = parts.uid ? kUidBytes : 0;
  const size_t n = parts.key.size() + parts.resource_version.size() + parts.labels.size() +
                   parts.owners.size() + uid_len + parts.packed.size();
  void* mem = ::operator new(sizeof(Entry) + n);
  EntryPtr e(new (mem) Entry());
  e->key_len = static_cast<uint32_t>(parts.key.size());
  e->ns_len = static_cast<uint32_t>(parts.ns_len);
  e->rv_len = static_cast<uint32_t>(parts.resource_version.size());
  e->labels_len = static_cast<uint32_t>(parts.labels.size());
  e->owners_len = static_cast<uint32_t>(parts.owners.size());
  e->packed_len = static_cast<uint32_t>(parts.packed.size());
  e->controller = parts.controller;
  e->flags = flags;
  char* p = reinterpret_cast<char*>(e.get() + 1);
  for (std::string_view part : {parts.key, parts.resource_version, parts.labels, parts.owners}) {
    std::memcpy(p, part.data(), part.size());
    p += part.size();
  }
  if (uid_len) std::memcpy(p, parts.uid, uid_len);
  std::memcpy(p + uid_len, parts.packed.data(), parts.packed.size());
  return e;
}

Object Store::decode(const Entry* e) const { return e->decode(kind_, api_version_); }

std::vector<Object> Store::decode_sorted(std::vector<const Entry*> entries) const {
  std::sort(entries.begin(), entries.end(),
            [](const Entry* a, const Entry* b) { return a->key() < b->key(); });
  std::vector<Object> out;
  out.reserve(entries.size());
  for (const Entry* e : entries) out.push_back(decode(e));
  return out;
}

std::optional<Object> Store::get(const std::string& ns, const std::string& name) const {
  return get_by_key(object_key(ns, name));
}

std::optional<Object> Store::get_by_key(const std::string& key) const {
  std::shared_lock lock(mu_);
  const Entry* e = state_->find(key);
  if (!e) return std::nullopt;
  return decode(e);
}

std::vector<Object> Store::list(const std::string& ns, const LabelSelector& selector) const {
  std::shared_lock lock(mu_);
  // Start from the smallest index that must contain every match, then filter.
  const std::vector<const Entry*>* candidates = nullptr;
  static const std::vector<const Entry*> kEmpty;  // a constant, not state
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
  std::string value;  // the label value a lookup returns; one lookup is used at a time
  auto consider = [&](const Entry* e) {
    if (!ns.empty() && e->ns() != ns) return;
    if (selector.matches_lookup([e, &value](const std::string& k) -> const std::string* {
          const auto v = e->label(k);
          if (!v) return nullptr;
          value.assign(*v);
          return &value;
        }))
      hits.push_back(e);
  };
  if (candidates) {
    for (const Entry* e : *candidates) consider(e);
  } else {
    for (const Entry* e : state_->by_key) consider(e);
  }
  return decode_sorted(std::move(hits));
}

std::vector<Object> Store::owned(const std::string& uid, bool controller_only) const {
  std::shared_lock lock(mu_);
  std::vector<const Entry*> hits;
  auto it = state_->by_owner.find(uid);
  if (it != state_->by_owner.end())
    for (const Entry* e : it->second)
      if (!controller_only || e->controlled_by(uid)) hits.push_back(e);
  return decode_sorted(std::move(hits));
}

std::vector<Object> Store::by_owner(const std::string& uid) const { return owned(uid, false); }
std::vector<Object> Store::by_controller(const std::string& uid) const { return owned(uid, true); }

std::vector<std::string> Store::keys() const {
  std::shared_lock lock(mu_);
  std::vector<std::string> out;
  out.reserve(state_->by_key.size());
  for (const Entry* e : state_->by_key) out.emplace_back(e->key());
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
  size_t n = state_->by_key.size() * (sizeof(void*) + kNode);
  for (const Entry* e : state_->by_key) n += e->bytes();
  for (const auto* idx : {&state_->by_ns, &state_->by_owner, &state_->by_label})
    for (const auto& [k, v] : *idx)
      n += sizeof(k) + k.capacity() + kNode + sizeof(v) + v.capacity() * sizeof(void*);
  return n;
}

std::optional<Object> Store::upsert(const Object& obj) {
  Object copy = obj;
  auto e = make_entry(copy);  // the expensive part, outside the lock
  std::unique_lock lock(mu_);
  auto old = state_->put(std::move(e));
  if (!old) return std::nullopt;
  return decode(old.get());
}

std::optional<Object> Store::erase(const Object& obj) {
  const std::string key = object_key(obj);
  std::unique_lock lock(mu_);
  auto old = state_->take(key);
  if (!old) return std::nullopt;
  return decode(old.get());
}

Store::Diff Store::replace(const std::vector<Object>& objects) {
  return replace(std::vector<Object>(objects), true, {});
}

Store::Diff Store::replace(std::vector<Object>&& objects) {
  return replace(std::move(objects), true, {});
}

Store::Diff Store::replace(std::vector<Object>&& objects, bool report,
                           const std::function<void()>& swapped) {
  std::vector<EntryPtr> made;
  made.reserve(objects.size());
  for (auto& o : objects) made.push_back(make_entry(o));
  made = pack_into_blocks(std::move(made));  // before the objects go: see EntryBlock
  objects.clear();
  objects.shrink_to_fit();
  return swap_in(std::move(made), report, swapped);
}

Store::Diff Store::swap_in(std::vector<EntryPtr> made, bool report,
                           const std::function<void()>& swapped) {
  auto next = std::make_unique<State>();
  for (auto& e : made) next->put(std::move(e));
  made.clear();
  made.shrink_to_fit();
  next->shrink();
  // Reading the current state needs no lock: this is the only writer. The changes are
  // collected as entries and decoded after the swap, so readers see the new content first.
  std::vector<const Entry*> added, deleted;
  std::vector<std::pair<const Entry*, const Entry*>> updated;
  if (report) {
    for (const Entry* e : next->by_key) {
      const Entry* prev = state_->find(e->key());
      if (!prev) added.push_back(e);
      else if (prev->resource_version() != e->resource_version()) updated.emplace_back(prev, e);
    }
    for (const Entry* e : state_->by_key)
      if (!next->find(e->key())) deleted.push_back(e);
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
  for (const Entry* e : added) diff.added.push_back(decode(e));
  for (const auto& [p, e] : updated) diff.updated.emplace_back(decode(p), decode(e));
  for (const Entry* e : deleted) diff.deleted.push_back(decode(e));
  return diff;  // `old` is freed here, outside the lock
}

}  // namespace kube
