// The store's relist from raw list pages: one SAX pass (json_scan.h) over a List's JSON streams
// each item into the EntryBuilder, without building an Object per item. Why: building the DOM
// (a std::map per JSON object, a std::string per value), encoding it and freeing it was most of
// the CPU an informer spent syncing. This file reads the List around the items (its metadata,
// the items array) and says what is wrong with a malformed page; the entries are the
// builder's, the same an Object of the item gives (entry_builder.h).
#include <string>
#include <string_view>
#include <vector>

#include "kube/entry_builder.h"
#include "kube/json_scan.h"
#include "kube/object_meta.h"
#include "kube/store.h"

namespace kube {

namespace {

ApiError invalid(const std::string& what) {
  return ApiError(200, "InvalidResponse", "list page: " + what);
}

}  // namespace

class Store::PageDecoder {
 public:
  PageDecoder(store_detail::EntryBuilder& builder, const Resource& r, std::vector<EntryPtr>& out)
      : builder_(builder), kind_(r.kind), api_version_(r.api_version()), out_(out) {}

  ListResult decode(std::string_view body) {
    try {
      JsonScanner<PageDecoder>(body, *this).run();
    } catch (const JsonScanError& e) {
      throw invalid(e.what());
    }
    if (!saw_root_) throw invalid("empty body");
    return std::move(page_);
  }

  // --- JsonScanner's handler interface: inside an item, the builder's ---
  void null() { in_item_ ? builder_.null() : outside_scalar(); }
  void boolean(bool v) { in_item_ ? builder_.boolean(v) : outside_scalar(); }
  void number_integer(int64_t v) { in_item_ ? builder_.number_integer(v) : outside_scalar(); }
  void number_unsigned(uint64_t v) { in_item_ ? builder_.number_unsigned(v) : outside_scalar(); }
  void number_float(double v) { in_item_ ? builder_.number_float(v) : outside_scalar(); }
  void string(std::string_view v);
  void key(std::string_view k) {
    if (in_item_) builder_.key(k);
    else pending_key_.assign(k);
  }
  void start_object() { in_item_ ? builder_.start_object() : open(true); }
  void start_array() { in_item_ ? builder_.start_array() : open(false); }
  void end_object();
  void end_array() { in_item_ ? builder_.end_array() : frames_.pop_back(); }

 private:
  // Where a value outside the items sits.
  enum class Role {
    Root,      // the List
    ListMeta,  // the List's metadata: resourceVersion and continue read
    Items,     // the items array: each element is one entry
    Drop,      // anything else: not read
  };

  void outside_scalar() {
    if (frames_.empty()) throw invalid("the body is not a JSON object");
    if (frames_.back() == Role::Items) throw not_an_object();
    if (frames_.back() == Role::Root && pending_key_ == "items")
      throw invalid("items is not an array");
  }
  ApiError not_an_object() const {
    return invalid("item " + std::to_string(item_index_) + " is not an object");
  }
  void open(bool map);
  void finish_item();

  store_detail::EntryBuilder& builder_;
  const std::string kind_, api_version_;  // what items without them get (complete_type_meta)
  std::vector<EntryPtr>& out_;
  ListResult page_;
  bool saw_root_ = false, in_item_ = false;
  std::vector<Role> frames_;
  std::string pending_key_;
  size_t item_index_ = 0;  // of the item being decoded (for errors)
};

void Store::PageDecoder::string(std::string_view v) {
  if (in_item_) return builder_.string(v);
  outside_scalar();
  if (frames_.back() == Role::ListMeta && frames_.size() == 2) {
    if (pending_key_ == "resourceVersion") page_.resource_version = v;
    else if (pending_key_ == "continue") page_.continue_token = v;
  }
}

void Store::PageDecoder::open(bool map) {
  if (frames_.empty()) {
    if (!map) throw invalid("the body is not a JSON object");
    saw_root_ = true;
    frames_.push_back(Role::Root);
    return;
  }
  switch (frames_.back()) {
    case Role::Root:
      if (pending_key_ == "items") {
        if (map) throw invalid("items is not an array");
        frames_.push_back(Role::Items);
      } else {
        frames_.push_back(pending_key_ == "metadata" && map ? Role::ListMeta : Role::Drop);
      }
      return;
    case Role::Items:
      if (!map) throw not_an_object();
      builder_.begin(kind_, api_version_);
      builder_.start_object();
      in_item_ = true;
      return;
    case Role::ListMeta:
    case Role::Drop:
      frames_.push_back(Role::Drop);
      return;
  }
}

void Store::PageDecoder::end_object() {
  if (!in_item_) return frames_.pop_back();
  builder_.end_object();
  if (builder_.done()) finish_item();
}

void Store::PageDecoder::finish_item() {
  in_item_ = false;
  if (!builder_.has_metadata() || !builder_.has_name())
    throw invalid("item " + std::to_string(item_index_) + " has no " +
                  (builder_.has_metadata() ? "metadata.name (a string)" : "metadata (an object)"));
  out_.push_back(builder_.finish());
  ++item_index_;
}

void Store::begin_relist(const Resource& r) {
  relist_resource_ = r;
  relist_.clear();
}

ListResult Store::add_relist_page(std::string_view body) {
  if (!options_.transform) return PageDecoder(*builder_, relist_resource_, relist_).decode(body);
  // A transform works on Objects: decode the page as RestClient::list does.
  Object page;
  try {
    page = Object::parse(body);
  } catch (const nlohmann::json::exception& e) {
    throw invalid(std::string("not valid JSON (") + e.what() + ")");
  }
  if (!page.is_object()) throw invalid("the body is not a JSON object");
  if (auto items = page.find("items"); items != page.end() && items->is_array())
    for (auto& item : *items) {
      complete_type_meta(item, relist_resource_);
      relist_.push_back(make_entry(item));
    }
  ListResult out;
  if (auto m = page.find("metadata"); m != page.end() && m->is_object()) {
    out.resource_version = m->value("resourceVersion", "");
    out.continue_token = m->value("continue", "");
  }
  return out;
}

Store::Diff Store::commit_relist(bool report, const std::function<void()>& swapped) {
  std::vector<EntryPtr> made = store_detail::pack_into_blocks(std::exchange(relist_, {}));
  return swap_in(std::move(made), report, swapped);
}

}  // namespace kube
