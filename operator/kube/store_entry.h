// The store's entry codec: one cached object in one allocation, and the blocks a relist packs
// its entries into. Internal to the store (store*.cc, entry_builder.cc); EntryBuilder makes the
// entries, Entry::decode reads them back.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kube/client.h"

namespace kube {

// One metadata.ownerReferences item as the store keeps it (views into an entry).
struct OwnerRef {
  std::string_view uid, api_version, kind, name;
  bool controller = false;
};

namespace store_detail {

constexpr size_t kUidBytes = 16;

// A lowercase 8-4-4-4-12 UUID as 16 bytes; false for anything else (kept in the body as is).
bool pack_uid(std::string_view s, uint8_t* out);

// Appends one owner reference to an owners blob ("uid\0apiVersion\0kind\0name\0" each); false
// (nothing appended) when a field holds a NUL byte, which no valid reference does.
bool append_owner(std::string& blob, const OwnerRef& ref);

enum EntryFlags : uint32_t {
  kName = 1,   // metadata.name was a string: left out of the body, restored from the key
  kNs = 2,     // metadata.namespace likewise
  kRv = 4,     // metadata.resourceVersion: restored from the entry
  kTyped = 8,  // kind/apiVersion were the store's TypeMeta: restored from it
  kUid = 16,   // metadata.uid was a canonical UUID: 16 bytes after the owners
};

// What one entry holds; the views must stay valid until the entry is built.
struct EntryParts {
  std::string_view key;  // "ns/name" or "name"
  size_t ns_len = 0;
  std::string_view resource_version;
  std::string_view labels;  // "k\0v\0" pairs
  std::string_view owners;  // see append_owner
  int32_t controller = -1;  // index of the controller reference among the owners, or -1
  const uint8_t* uid = nullptr;  // kUidBytes when flags has kUid
  uint32_t flags = 0;            // EntryFlags: what the body leaves out
  std::string_view packed;       // the MessagePack body
};

struct EntryBlock;

// One cached object in one allocation: this header, then the key ("ns/name"), the
// resourceVersion, the labels, the owners, the uid (16 bytes, with kUid) and the MessagePack
// body. The body leaves out what the header or the store already say (flags); decode() puts
// them back, so objects read back exactly as stored.
struct Entry {
  EntryBlock* block = nullptr;  // the relist block holding this entry, or null: its own allocation
  uint32_t key_len = 0, ns_len = 0, rv_len = 0, labels_len = 0, owners_len = 0, packed_len = 0;
  int32_t controller = -1;
  uint32_t flags = 0;

  const char* data() const { return reinterpret_cast<const char*>(this + 1); }
  std::string_view key() const { return {data(), key_len}; }
  std::string_view ns() const { return key().substr(0, ns_len); }
  std::string_view name() const { return ns_len == 0 ? key() : key().substr(ns_len + 1); }
  std::string_view resource_version() const { return {data() + key_len, rv_len}; }
  std::string_view labels_blob() const { return {data() + key_len + rv_len, labels_len}; }
  std::string_view owners_blob() const { return {data() + key_len + rv_len + labels_len, owners_len}; }
  const uint8_t* uid() const { return reinterpret_cast<const uint8_t*>(owners_blob().end()); }
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
  std::optional<std::string_view> label(std::string_view key) const;
  // f(ref) for each owner reference.
  template <typename F>
  void for_each_owner(F&& f) const {
    std::string_view b = owners_blob();
    auto next = [&b] {
      const size_t end = b.find('\0');
      const std::string_view s = b.substr(0, end);
      b.remove_prefix(end + 1);
      return s;
    };
    for (int32_t i = 0; !b.empty(); ++i) {
      OwnerRef r;
      r.uid = next();
      r.api_version = next();
      r.kind = next();
      r.name = next();
      r.controller = i == controller;
      f(r);
    }
  }
  bool controlled_by(std::string_view uid) const;

  // The object as stored; kind/apiVersion are the store's (kTyped).
  Object decode(const std::string& kind, const std::string& api_version) const;
};

// The entries of one relist, packed back to back in one allocation of at most kBytes (or one
// larger entry), freed with its last entry. Why: a relist's entries are packed while the listed
// objects still exist, and malloc places them in the holes between those objects; freeing the
// objects then leaves every entry alone on its own few pages, and the process keeps ~4x the
// cache's size resident (the heap is fine, RSS is not). Copied into blocks allocated before the
// list is freed, the entries sit together and the list's pages go back to the system.
// A block is kept while any of its entries lives: at worst as much as the relist packed.
// alignas: the entries start right after this header and need Entry's alignment.
struct alignas(16) EntryBlock {
  static constexpr size_t kBytes = 256 * 1024;
  std::atomic<uint32_t> live{0};
  char* base() { return reinterpret_cast<char*>(this + 1); }
};

struct EntryDeleter {
  void operator()(Entry* e) const;
};
using EntryPtr = std::unique_ptr<Entry, EntryDeleter>;

// One allocation holding `parts`.
EntryPtr build_entry(const EntryParts& parts);
// Moves a relist's entries into a few contiguous blocks (see EntryBlock).
std::vector<EntryPtr> pack_into_blocks(std::vector<EntryPtr> entries);

}  // namespace store_detail
}  // namespace kube
