// List pages from the API server as the informer's store decodes them: the strict JSON reader
// (operator/kube/json_scan.h) driving the one-pass page decoder (store_relist.cc), which must
// give exactly what the Object path gives (nlohmann's parse, complete_type_meta, Store::replace,
// as RestClient::list + Informer did before it).
//
// Invariants, for any bytes as a page of ConfigMaps:
//  - JSON that nlohmann rejects, the page decoder rejects (ApiError InvalidResponse);
//  - a page the decoder accepts is valid JSON, and the store holds exactly the objects the
//    Object path stores from it: the same keys, equal objects, the same approximate size, and
//    the same list resourceVersion and continue token;
//  - a valid page it rejects is one it must reject: not an object, items not an array of
//    objects, or an item without metadata.name as a string;
//  - nothing but ApiError is thrown.
// Pages with a key twice in one object are left out of the comparison: nlohmann keeps the last,
// the streaming decoder sees both, and the API server never sends such JSON.
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "kube/api_error.h"
#include "kube/object_meta.h"
#include "kube/store.h"

namespace {

using kube::Object;

// A SAX handler for nlohmann::json::sax_parse that only notes a key seen twice in one object.
struct DuplicateKeys : nlohmann::json_sax<Object> {
  std::vector<std::set<std::string>> keys;
  bool found = false;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    keys.emplace_back();
    return true;
  }
  bool key(string_t& k) override {
    if (!keys.back().insert(k).second) found = true;
    return true;
  }
  bool end_object() override {
    keys.pop_back();
    return true;
  }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }
};

// Whether a parsed page is one the decoder must take (see store_relist.cc).
bool well_formed_page(const Object& page) {
  if (!page.is_object()) return false;
  const auto items = page.find("items");
  if (items == page.end()) return true;
  if (!items->is_array()) return false;
  for (const auto& item : *items) {
    if (!item.is_object()) return false;
    const auto meta = item.find("metadata");
    if (meta == item.end() || !meta->is_object()) return false;
    const auto name = meta->find("name");
    if (name == meta->end() || !name->is_string()) return false;
  }
  return true;
}

std::string string_at(const Object& page, const char* key) {
  const auto meta = page.find("metadata");
  if (meta == page.end() || !meta->is_object()) return "";
  const auto v = meta->find(key);
  return v != meta->end() && v->is_string() ? v->get<std::string>() : "";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const kube::Resource& resource = kube::resources::kConfigMaps;

  kube::Store decoded;
  std::optional<kube::ListResult> meta;
  decoded.begin_relist(resource);
  try {
    meta = decoded.add_relist_page(text);
  } catch (const kube::ApiError& e) {
    FUZZ_CHECK(std::string(e.what()).find("list page: ") != std::string::npos, e.what());
  }

  // nlohmann's lexer ends the input at the first NUL byte, so it would judge only the text before
  // it. No JSON text holds a raw NUL (strings must escape control characters): refuse it.
  if (text.find('\0') != std::string::npos) {
    FUZZ_CHECK(!meta, "the page decoder took a page with a NUL byte: " + fuzz::excerpt(text));
    return 0;
  }
  Object page;
  try {
    page = Object::parse(text);
  } catch (const nlohmann::json::parse_error&) {
    FUZZ_CHECK(!meta, "the page decoder took JSON that nlohmann rejects: " + fuzz::excerpt(text));
    return 0;
  } catch (const nlohmann::json::out_of_range&) {
    // Valid JSON with a number nlohmann cannot hold (-2.5e9223372036854775809: RFC 8259 leaves
    // the range to the parser); the page decoder need not hold it either. Nothing to compare.
    return 0;
  }
  DuplicateKeys duplicates;
  Object::sax_parse(text, &duplicates);
  if (duplicates.found) return 0;

  const bool must_take = well_formed_page(page);
  FUZZ_CHECK(meta.has_value() == must_take,
             std::string(meta ? "took" : "refused") + " a page it should have " +
                 (meta ? "refused" : "taken") + ": " + fuzz::excerpt(text));
  if (!meta) return 0;
  decoded.commit_relist(true, {});

  // The Object path.
  kube::Store objects;
  std::vector<Object> items;
  if (page.contains("items"))
    for (auto& item : page["items"]) {
      kube::complete_type_meta(item, resource);
      items.push_back(std::move(item));
    }
  objects.replace(std::move(items));

  FUZZ_CHECK(meta->resource_version == string_at(page, "resourceVersion"), "list resourceVersion");
  FUZZ_CHECK(meta->continue_token == string_at(page, "continue"), "list continue token");
  FUZZ_CHECK(decoded.keys() == objects.keys(), "different keys: " + fuzz::excerpt(text));
  const auto a = decoded.list(), b = objects.list();
  FUZZ_CHECK(a.size() == b.size(), "different sizes");
  for (size_t i = 0; i < a.size(); ++i)
    FUZZ_CHECK(a[i] == b[i], "object differs:\n  page decoder: " + a[i].dump() + "\n  Object path:  " + b[i].dump());
  FUZZ_CHECK(decoded.approx_bytes() == objects.approx_bytes(),
             "entry sizes differ: " + std::to_string(decoded.approx_bytes()) + " vs " +
                 std::to_string(objects.approx_bytes()) + " for " + fuzz::excerpt(text));
  return 0;
}
