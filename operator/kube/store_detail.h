// Pieces shared by the two ways the Store makes entries: from an Object (store.cc) and straight
// from a list page's JSON (store_relist.cc). Internal to the store.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kube::store_detail {

constexpr size_t kUidBytes = 16;

// A lowercase 8-4-4-4-12 UUID as 16 bytes; false for anything else (kept in the body as is).
bool pack_uid(std::string_view s, uint8_t* out);

// Writes the owner uids as "uid\0" each into `blob` (cleared first) and returns the index of the
// controller's uid among them, or -1 (none, or `controller` empty).
int32_t pack_owners(const std::vector<std::string>& owners, std::string_view controller, std::string& blob);

// What one entry holds; the views must stay valid until the entry is built.
struct EntryParts {
  std::string_view key;  // "ns/name" or "name"
  size_t ns_len = 0;
  std::string_view resource_version;
  std::string_view labels;  // "k\0v\0" pairs
  std::string_view owners;  // "uid\0" each
  int32_t controller = -1;  // index of the controller's uid among owners, or -1
  const uint8_t* uid = nullptr;  // kUidBytes, or null: metadata.uid stays in the body
  // What the body leaves out, restored on decode.
  bool name_taken = false, ns_taken = false, rv_taken = false, typed = false;
  std::string_view packed;  // the MessagePack body
};

}  // namespace kube::store_detail
