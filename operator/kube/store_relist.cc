// The store's relist from raw list pages: one SAX pass (json_scan.h) over a List's JSON writes
// each item straight into its entry (the MessagePack body, key, resourceVersion, labels, owner
// uids, uid), as make_entry() does from an Object, without building an Object per item. Why:
// building the DOM (a std::map per JSON object, a std::string per value), re-encoding it and
// freeing it was most of the CPU an informer spent syncing.
//
// The entries are the ones make_entry() makes from what RestClient::list returns: the same
// fields left out of the body and restored on decode, managedFields stripped, kind/apiVersion
// completed from the resource. Only the order of keys in a body may differ (document order
// instead of sorted), which decodes to an equal Object of the same size.
#include <string>
#include <string_view>
#include <vector>

#include "kube/json_scan.h"
#include "kube/msgpack_writer.h"
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
  PageDecoder(Store& store, const Resource& r, std::vector<EntryPtr>& out)
      : store_(store), resource_(r), api_version_of_resource_(r.api_version()), out_(out) {}

  ListResult decode(std::string_view body) {
    try {
      JsonScanner<PageDecoder>(body, *this).run();
    } catch (const JsonScanError& e) {
      throw invalid(e.what());
    }
    if (!saw_root_) throw invalid("empty body");
    return std::move(page_);
  }

  // --- JsonScanner's handler interface ---
  void null() {
    if (scalar_value()) msgpack::write_nil(buf_);
  }
  void boolean(bool v) {
    if (top_role() == Role::Owner && pending_key_ == "controller" && v) ref_controller_ = true;
    if (scalar_value()) msgpack::write_bool(buf_, v);
  }
  void number_integer(int64_t v) {
    if (scalar_value()) msgpack::write_int(buf_, v);
  }
  void number_unsigned(uint64_t v) {
    if (scalar_value()) msgpack::write_uint(buf_, v);
  }
  void number_float(double v) {
    if (scalar_value()) msgpack::write_float(buf_, v);
  }
  void string(std::string_view v);
  void key(std::string_view k) { pending_key_.assign(k); }
  void start_object() { open(true); }
  void start_array() { open(false); }
  void end_object() { close(); }
  void end_array() { close(); }

 private:
  // Where a value sits, which decides what happens to it.
  enum class Role {
    Root,      // the List: not written
    ListMeta,  // the List's metadata: resourceVersion and continue read, nothing written
    Items,     // the items array: each element is one entry
    Item,      // an item: written (its body)
    ItemMeta,  // item.metadata: name, namespace, resourceVersion, uid taken out
    Labels,    // item.metadata.labels: written and collected
    Owners,    // item.metadata.ownerReferences: written
    Owner,     // one owner reference: written, uid/controller collected
    Body,      // anything else inside an item: written as is
    Drop,      // outside items (or managedFields): neither written nor read
  };
  struct Frame {
    Role role;
    bool map;
    size_t header = 0;  // position of the MessagePack header in buf_ (written roles)
    size_t count = 0;   // elements written
  };

  Role top_role() const { return frames_.empty() ? Role::Drop : frames_.back().role; }
  static bool written(Role r) {
    return r != Role::Root && r != Role::ListMeta && r != Role::Drop && r != Role::Items;
  }

  // A value is about to be written into the current frame: its key (in a map) goes first.
  void begin_written_value() {
    Frame& f = frames_.back();
    if (f.map) msgpack::write_str(buf_, pending_key_);
    ++f.count;
  }

  // true when a scalar in the current position is written to the body.
  bool scalar_value() {
    if (frames_.empty()) throw invalid("the body is not a JSON object");
    const Role r = top_role();
    if (r == Role::Items) throw not_an_object();
    if (!written(r)) return false;
    if (r == Role::ItemMeta && pending_key_ == "managedFields" &&
        store_.options_.strip_managed_fields)
      return false;
    if (r == Role::Item && (pending_key_ == "kind" || pending_key_ == "apiVersion"))
      (pending_key_ == "kind" ? kind_ : api_version_).present = true;  // not a string: kept
    begin_written_value();
    return true;
  }

  ApiError not_an_object() const {
    return invalid("item " + std::to_string(item_index_) + " is not an object");
  }
  void open(bool map);
  void close();
  void start_item();
  void finish_item();

  Store& store_;
  const Resource& resource_;
  const std::string api_version_of_resource_;
  std::vector<EntryPtr>& out_;
  ListResult page_;
  bool saw_root_ = false;
  std::vector<Frame> frames_;
  std::string pending_key_;
  size_t item_index_ = 0;  // of the item being decoded (for errors)

  // The item being decoded.
  std::string buf_;  // its MessagePack body
  struct TypeField {
    bool present = false;  // in the item (as a string: in `value`, not yet written)
    bool is_string = false;
    std::string value;
  } kind_, api_version_;
  bool has_meta_ = false, name_set_ = false, ns_taken_ = false, rv_set_ = false, uid_set_ = false;
  std::string name_, ns_, rv_, labels_, owner_blob_, controller_uid_, ref_uid_;
  std::vector<std::string> owners_;
  bool ref_has_uid_ = false, ref_controller_ = false;
  uint8_t uid_[store_detail::kUidBytes];
};

void Store::PageDecoder::string(std::string_view v) {
  if (frames_.empty()) throw invalid("the body is not a JSON object");
  const Role r = top_role();
  switch (r) {
    case Role::ListMeta:
      if (frames_.size() == 2) {
        if (pending_key_ == "resourceVersion") page_.resource_version = v;
        else if (pending_key_ == "continue") page_.continue_token = v;
      }
      return;
    case Role::Root:
    case Role::Drop:
      return;
    case Role::Items:
      throw not_an_object();
    case Role::Item:
      if (pending_key_ == "kind" || pending_key_ == "apiVersion") {
        TypeField& t = pending_key_ == "kind" ? kind_ : api_version_;
        t.present = t.is_string = true;
        t.value = v;
        return;  // written (or left out) when the item ends
      }
      break;
    case Role::ItemMeta:
      if (pending_key_ == "name") {
        name_ = v;
        name_set_ = true;
        return;
      }
      if (pending_key_ == "namespace" && !v.empty()) {
        ns_ = v;
        ns_taken_ = true;
        return;
      }
      if (pending_key_ == "resourceVersion") {
        rv_ = v;
        rv_set_ = true;
        return;
      }
      if (pending_key_ == "uid" && store_detail::pack_uid(v, uid_)) {
        uid_set_ = true;
        return;
      }
      if (pending_key_ == "managedFields" && store_.options_.strip_managed_fields) return;
      break;
    case Role::Labels:
      if (pending_key_.find('\0') == std::string::npos && v.find('\0') == std::string::npos) {
        labels_.append(pending_key_).push_back('\0');
        labels_.append(v).push_back('\0');
      }
      break;
    case Role::Owner:
      if (pending_key_ == "uid") {
        ref_uid_ = v;
        ref_has_uid_ = true;
      }
      break;
    case Role::Owners:
    case Role::Body:
      break;
  }
  begin_written_value();
  msgpack::write_str(buf_, v);
  return;
}

void Store::PageDecoder::open(bool map) {
  if (frames_.empty()) {
    if (!map) throw invalid("the body is not a JSON object");
    saw_root_ = true;
    frames_.push_back({Role::Root, true});
    return;
  }
  const Role parent = top_role();
  Role role = Role::Body;
  switch (parent) {
    case Role::Root:
      if (pending_key_ == "items") {
        if (map) throw invalid("items is not an array");
        role = Role::Items;
      } else {
        role = pending_key_ == "metadata" && map ? Role::ListMeta : Role::Drop;
      }
      frames_.push_back({role, map});
      return;
    case Role::ListMeta:
    case Role::Drop:
      frames_.push_back({Role::Drop, map});
      return;
    case Role::Items:
      if (!map) throw not_an_object();
      start_item();
      frames_.push_back({Role::Item, true, msgpack::open(buf_), 0});
      return;
    case Role::Item:
      if (pending_key_ == "metadata" && map) {
        role = Role::ItemMeta;
        has_meta_ = true;
      } else if (pending_key_ == "kind" || pending_key_ == "apiVersion") {
        (pending_key_ == "kind" ? kind_ : api_version_).present = true;
      }
      break;
    case Role::ItemMeta:
      if (pending_key_ == "managedFields" && store_.options_.strip_managed_fields) {
        frames_.push_back({Role::Drop, map});
        return;
      }
      if (pending_key_ == "labels" && map) role = Role::Labels;
      else if (pending_key_ == "ownerReferences" && !map) role = Role::Owners;
      break;
    case Role::Owners:
      if (map) {
        role = Role::Owner;
        ref_has_uid_ = ref_controller_ = false;
      }
      break;
    case Role::Labels:
    case Role::Owner:
    case Role::Body:
      break;
  }
  begin_written_value();
  frames_.push_back({role, map, msgpack::open(buf_), 0});
}

void Store::PageDecoder::close() {
  const Frame f = frames_.back();
  if (f.role == Role::Item) {
    finish_item();
    frames_.pop_back();
    return;
  }
  frames_.pop_back();
  if (!written(f.role)) return;
  msgpack::close(buf_, f.header, f.count, f.map);
  if (f.role == Role::Owner && ref_has_uid_) {
    owners_.push_back(ref_uid_);
    if (ref_controller_ && controller_uid_.empty()) controller_uid_ = ref_uid_;
  }
}

void Store::PageDecoder::start_item() {
  buf_.clear();
  kind_ = {};
  api_version_ = {};
  has_meta_ = name_set_ = ns_taken_ = rv_set_ = uid_set_ = false;
  ns_.clear();
  rv_.clear();
  labels_.clear();
  owners_.clear();
  controller_uid_.clear();
}

void Store::PageDecoder::finish_item() {
  Frame& item = frames_.back();
  if (!has_meta_ || !name_set_)
    throw invalid("item " + std::to_string(item_index_) + " has no " +
                  (has_meta_ ? "metadata.name (a string)" : "metadata (an object)"));
  // complete_type_meta(), then make_entry()'s TypeMeta check.
  if (!kind_.present && !resource_.kind.empty()) {
    kind_.is_string = true;
    kind_.value = resource_.kind;
  }
  if (!api_version_.present) {
    api_version_.is_string = true;
    api_version_.value = api_version_of_resource_;
  }
  store_detail::EntryParts parts;
  parts.typed = kind_.is_string && api_version_.is_string &&
                store_.is_store_type(kind_.value, api_version_.value);
  if (!parts.typed) {
    for (const auto& [k, t] : {std::pair{"kind", &kind_}, std::pair{"apiVersion", &api_version_}})
      if (t->is_string) {
        msgpack::write_str(buf_, k);
        msgpack::write_str(buf_, t->value);
        ++item.count;
      }
  }
  msgpack::close(buf_, item.header, item.count, true);

  std::string key = object_key(ns_, name_);
  const int32_t controller = store_detail::pack_owners(owners_, controller_uid_, owner_blob_);
  parts.key = key;
  parts.ns_len = ns_.size();
  parts.resource_version = rv_;
  parts.labels = labels_;
  parts.owners = owner_blob_;
  parts.controller = controller;
  parts.uid = uid_set_ ? uid_ : nullptr;
  parts.name_taken = true;
  parts.ns_taken = ns_taken_;
  parts.rv_taken = rv_set_;
  parts.packed = buf_;
  out_.push_back(build_entry(parts));
  ++item_index_;
}

void Store::begin_relist(const Resource& r) {
  relist_resource_ = r;
  relist_.clear();
}

ListResult Store::add_relist_page(std::string_view body) {
  if (!options_.transform) return PageDecoder(*this, relist_resource_, relist_).decode(body);
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
  std::vector<EntryPtr> made = pack_into_blocks(std::exchange(relist_, {}));
  return swap_in(std::move(made), report, swapped);
}

}  // namespace kube
