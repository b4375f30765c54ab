// EntryBuilder: the store's one encoder. It takes one object as a stream of SAX events (the
// calls of json_scan.h's JsonScanner) and writes its entry: the MessagePack body (byte for byte
// what nlohmann::json::to_msgpack gives, msgpack_writer.h), less what the entry's header holds
// (name, namespace, resourceVersion, a canonical uid, and kind/apiVersion when they are the
// store's), with managedFields dropped when asked, and the labels and owner references
// collected for the indexes. Both ways the store takes objects use it: an Object (upsert,
// replace) is walked into it (build), and a list page's items are streamed into it without an
// Object (store_relist.cc). So the same object gives the same entry either way; only the order
// of keys in the body follows the input (an Object walks its keys sorted). An event made from
// an Object gets its header entry from here too (header), so owners are read in one place.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "kube/client.h"
#include "kube/store_entry.h"

namespace kube::store_detail {

class EntryBuilder {
 public:
  // Whether kind/apiVersion are the store's TypeMeta (the first typed object sets it).
  using TypeCheck = std::function<bool(std::string_view kind, std::string_view api_version)>;
  EntryBuilder(bool strip_managed_fields, TypeCheck is_store_type);

  // The entry of an Object. Throws std::invalid_argument when it is not a JSON object.
  EntryPtr build(const Object& obj);
  // An entry with only the header of obj (key, resourceVersion, owners): no labels, no uid, no
  // body, so only those metadata fields are walked. For an event made from an Object, whose
  // object is the given one; anything but a JSON object gives an empty header.
  static EntryPtr header(const Object& obj);

  // --- Streaming: begin(), then the events of one JSON object, then finish(). ---
  // kind/apiVersion an object without them gets ("": none), as complete_type_meta fills them
  // in for list items; the views must outlive the object's events.
  void begin(std::string_view default_kind, std::string_view default_api_version);
  void null();
  void boolean(bool v);
  void number_integer(int64_t v);
  void number_unsigned(uint64_t v);
  void number_float(double v);
  void string(std::string_view v);
  void key(std::string_view k) { pending_key_.assign(k); }
  void start_object() { open(true); }
  void start_array() { open(false); }
  void end_object() { close(); }
  void end_array() { close(); }
  // After the object's end_object: whether it had metadata (an object) with a string name.
  bool done() const { return done_; }
  bool has_metadata() const { return has_meta_; }
  bool has_name() const { return name_set_; }
  EntryPtr finish();

 private:
  // Where a value sits, which decides what happens to it.
  enum class Role {
    Item,      // the object: written (its body)
    ItemMeta,  // metadata: name, namespace, resourceVersion, uid taken out
    Labels,    // metadata.labels: written and collected
    Owners,    // metadata.ownerReferences: written
    Owner,     // one owner reference: written, its fields collected
    Body,      // anything else: written as is
    Drop,      // managedFields (when stripped): neither written nor read
  };
  struct Frame {
    Role role;
    bool map;
    size_t header = 0;  // position of the MessagePack header in buf_
    size_t count = 0;   // elements written
  };
  struct TypeField {
    bool present = false;  // in the object (as a string: in `value`, not yet written)
    bool is_string = false;
    std::string value;
  };

  void walk(const Object& v);
  bool scalar();  // true when a scalar here is written to the body (its key written first)
  void value_start();
  TypeField* type_field();  // kind_/api_version_ when the pending key at the top names one
  void open(bool map);
  void close();
  void finish_body(Frame& item);
  EntryPtr finish_entry(bool with_body);  // without: key, resourceVersion and owners only

  const bool strip_;
  const TypeCheck is_store_type_;
  std::string_view default_kind_, default_api_version_;
  std::vector<Frame> frames_;
  std::string pending_key_;
  bool done_ = false;

  // The object being built.
  std::string buf_;  // its MessagePack body
  TypeField kind_, api_version_;
  bool has_meta_ = false, name_set_ = false, typed_ = false;
  uint32_t flags_ = 0;
  std::string key_, name_, ns_, rv_, labels_, owners_;
  int32_t controller_ = -1, owner_count_ = 0;
  struct {
    std::string uid, api_version, kind, name;
    bool has_uid = false, controller = false;
  } ref_;  // the owner reference being read
  uint8_t uid_[kUidBytes];
};

}  // namespace kube::store_detail
