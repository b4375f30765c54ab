#include "kube/store_entry.h"

#include <cstring>
#include <new>
#include <type_traits>


namespace kube::store_detail {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

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

constexpr size_t entry_align(size_t n) { return (n + 15) & ~size_t{15}; }

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

bool append_owner(std::string& blob, const OwnerRef& ref) {
  for (std::string_view f : {ref.uid, ref.api_version, ref.kind, ref.name})
    if (f.find('\0') != std::string_view::npos) return false;
  for (std::string_view f : {ref.uid, ref.api_version, ref.kind, ref.name})
    blob.append(f).push_back('\0');
  return true;
}

std::optional<std::string_view> Entry::label(std::string_view key) const {
  std::optional<std::string_view> out;
  for_each_label([&](std::string_view k, std::string_view v) {
    if (!out && k == key) out = v;
  });
  return out;
}

bool Entry::controlled_by(std::string_view uid) const {
  bool hit = false;
  for_each_owner([&](const OwnerRef& r) { hit = hit || (r.controller && r.uid == uid); });
  return hit;
}

Object Entry::decode(const std::string& kind, const std::string& api_version) const {
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

void EntryDeleter::operator()(Entry* e) const {
  EntryBlock* block = e->block;
  e->~Entry();
  if (!block) {
    ::operator delete(e);
  } else if (block->live.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    block->~EntryBlock();
    ::operator delete(block);
  }
}

EntryPtr build_entry(const EntryParts& parts) {
  const size_t uid_len = (parts.flags & kUid) ? kUidBytes : 0;
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
  e->flags = parts.flags;
  char* p = reinterpret_cast<char*>(e.get() + 1);
  // An empty part may have no data at all (a null pointer), which memcpy must not be given even
  // for 0 bytes.
  for (std::string_view part : {parts.key, parts.resource_version, parts.labels, parts.owners}) {
    if (!part.empty()) std::memcpy(p, part.data(), part.size());
    p += part.size();
  }
  if (uid_len) std::memcpy(p, parts.uid, uid_len);
  if (!parts.packed.empty()) std::memcpy(p + uid_len, parts.packed.data(), parts.packed.size());
  return e;
}

std::vector<EntryPtr> pack_into_blocks(std::vector<EntryPtr> entries) {
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

}  // namespace kube::store_detail
