#include "kube/entry_builder.h"

#include <stdexcept>
#include <utility>

#include "kube/msgpack_writer.h"

namespace kube::store_detail {

EntryBuilder::EntryBuilder(bool strip_managed_fields, TypeCheck is_store_type)
    : strip_(strip_managed_fields), is_store_type_(std::move(is_store_type)) {}

EntryPtr EntryBuilder::build(const Object& obj) {
  if (!obj.is_object())
    throw std::invalid_argument("store: an object must be a JSON object, not " +
                                std::string(obj.type_name()));
  begin("", "");
  walk(obj);
  return finish();
}

void EntryBuilder::walk(const Object& v) {
  using T = Object::value_t;
  switch (v.type()) {
    case T::object:
      start_object();
      for (const auto& [k, x] : v.items()) {
        key(k);
        walk(x);
      }
      end_object();
      return;
    case T::array:
      start_array();
      for (const Object& x : v) walk(x);
      end_array();
      return;
    case T::string: string(v.get_ref<const std::string&>()); return;
    case T::boolean: boolean(v.get<bool>()); return;
    case T::number_integer: number_integer(v.get<int64_t>()); return;
    case T::number_unsigned: number_unsigned(v.get<uint64_t>()); return;
    case T::number_float: number_float(v.get<double>()); return;
    case T::null: null(); return;
    case T::binary:
    case T::discarded: break;
  }
  throw std::invalid_argument("store: objects hold JSON values only, not " +
                              std::string(v.type_name()));
}

void EntryBuilder::begin(std::string_view default_kind, std::string_view default_api_version) {
  default_kind_ = default_kind;
  default_api_version_ = default_api_version;
  frames_.clear();
  done_ = false;
  buf_.clear();
  kind_ = {};
  api_version_ = {};
  has_meta_ = name_set_ = typed_ = false;
  flags_ = 0;
  name_.clear();
  ns_.clear();
  rv_.clear();
  labels_.clear();
  owners_.clear();
  controller_ = -1;
  owner_count_ = 0;
}

EntryBuilder::TypeField* EntryBuilder::type_field() {
  if (frames_.back().role != Role::Item) return nullptr;
  if (pending_key_ == "kind") return &kind_;
  if (pending_key_ == "apiVersion") return &api_version_;
  return nullptr;
}

void EntryBuilder::value_start() {
  Frame& f = frames_.back();
  if (f.map) msgpack::write_str(buf_, pending_key_);
  ++f.count;
}

bool EntryBuilder::scalar() {
  const Role r = frames_.back().role;
  if (r == Role::Drop) return false;
  if (r == Role::ItemMeta && strip_ && pending_key_ == "managedFields") return false;
  if (TypeField* t = type_field()) t->present = true;  // not a string: kept in the body
  value_start();
  return true;
}

void EntryBuilder::null() {
  if (scalar()) msgpack::write_nil(buf_);
}

void EntryBuilder::boolean(bool v) {
  if (frames_.back().role == Role::Owner && pending_key_ == "controller") ref_.controller = v;
  if (scalar()) msgpack::write_bool(buf_, v);
}

void EntryBuilder::number_integer(int64_t v) {
  if (scalar()) msgpack::write_int(buf_, v);
}

void EntryBuilder::number_unsigned(uint64_t v) {
  if (scalar()) msgpack::write_uint(buf_, v);
}

void EntryBuilder::number_float(double v) {
  if (scalar()) msgpack::write_float(buf_, v);
}

void EntryBuilder::string(std::string_view v) {
  switch (frames_.back().role) {
    case Role::Drop:
      return;
    case Role::Item:
      if (TypeField* t = type_field()) {
        t->present = t->is_string = true;
        t->value = v;
        return;  // written (or left out) when the object ends
      }
      break;
    case Role::ItemMeta:
      if (pending_key_ == "name") {
        name_ = v;
        name_set_ = true;
        flags_ |= kName;
        return;
      }
      if (pending_key_ == "namespace" && !v.empty()) {
        ns_ = v;
        flags_ |= kNs;
        return;
      }
      if (pending_key_ == "resourceVersion") {
        rv_ = v;
        flags_ |= kRv;
        return;
      }
      if (pending_key_ == "uid" && pack_uid(v, uid_)) {
        flags_ |= kUid;
        return;
      }
      if (pending_key_ == "managedFields" && strip_) return;
      break;
    case Role::Labels:
      if (pending_key_.find('\0') == std::string::npos && v.find('\0') == std::string::npos) {
        labels_.append(pending_key_).push_back('\0');
        labels_.append(v).push_back('\0');
      }
      break;
    case Role::Owner:
      if (pending_key_ == "uid") {
        ref_.uid = v;
        ref_.has_uid = true;
      } else if (pending_key_ == "apiVersion") {
        ref_.api_version = v;
      } else if (pending_key_ == "kind") {
        ref_.kind = v;
      } else if (pending_key_ == "name") {
        ref_.name = v;
      }
      break;
    case Role::Owners:
    case Role::Body:
      break;
  }
  value_start();
  msgpack::write_str(buf_, v);
}

void EntryBuilder::open(bool map) {
  if (frames_.empty()) {  // the object itself
    frames_.push_back({Role::Item, true, msgpack::open(buf_), 0});
    return;
  }
  Role role = Role::Body;
  switch (frames_.back().role) {
    case Role::Drop:
      frames_.push_back({Role::Drop, map});
      return;
    case Role::Item:
      if (pending_key_ == "metadata" && map) {
        role = Role::ItemMeta;
        has_meta_ = true;
      } else if (TypeField* t = type_field()) {
        t->present = true;
      }
      break;
    case Role::ItemMeta:
      if (pending_key_ == "managedFields" && strip_) {
        frames_.push_back({Role::Drop, map});
        return;
      }
      if (pending_key_ == "labels" && map) role = Role::Labels;
      else if (pending_key_ == "ownerReferences" && !map) role = Role::Owners;
      break;
    case Role::Owners:
      if (map) {
        role = Role::Owner;
        ref_ = {};
      }
      break;
    case Role::Labels:
    case Role::Owner:
    case Role::Body:
      break;
  }
  value_start();
  frames_.push_back({role, map, msgpack::open(buf_), 0});
}

void EntryBuilder::close() {
  Frame f = frames_.back();
  frames_.pop_back();
  if (f.role == Role::Drop) return;
  if (f.role == Role::Item) {
    finish_body(f);
    done_ = true;
    return;
  }
  msgpack::close(buf_, f.header, f.count, f.map);
  if (f.role == Role::Owner && ref_.has_uid &&
      append_owner(owners_, {ref_.uid, ref_.api_version, ref_.kind, ref_.name})) {
    if (ref_.controller && controller_ < 0) controller_ = owner_count_;
    ++owner_count_;
  }
}

void EntryBuilder::finish_body(Frame& item) {
  // complete_type_meta(), then whether this is the store's TypeMeta.
  if (!kind_.present && !default_kind_.empty()) {
    kind_.is_string = true;
    kind_.value = default_kind_;
  }
  if (!api_version_.present && !default_api_version_.empty()) {
    api_version_.is_string = true;
    api_version_.value = default_api_version_;
  }
  typed_ = kind_.is_string && api_version_.is_string &&
           is_store_type_(kind_.value, api_version_.value);
  if (typed_) {
    flags_ |= kTyped;
  } else {
    for (const auto& [k, t] : {std::pair{"kind", &kind_}, std::pair{"apiVersion", &api_version_}})
      if (t->is_string) {
        msgpack::write_str(buf_, k);
        msgpack::write_str(buf_, t->value);
        ++item.count;
      }
  }
  msgpack::close(buf_, item.header, item.count, true);
}

EntryPtr EntryBuilder::header(const Object& obj) {
  EntryBuilder b(true, [](std::string_view, std::string_view) { return false; });
  b.begin("", "");
  b.start_object();
  if (const auto m = obj.find("metadata"); m != obj.end() && m->is_object()) {
    // Only what the header holds is walked: the body is not kept, so the rest is not encoded.
    b.key("metadata");
    b.start_object();
    for (const char* k : {"name", "namespace", "resourceVersion", "ownerReferences"})
      if (const auto f = m->find(k); f != m->end()) {
        b.key(k);
        b.walk(*f);
      }
    b.end_object();
  }
  b.end_object();
  return b.finish_entry(false);
}

EntryPtr EntryBuilder::finish() { return finish_entry(true); }

EntryPtr EntryBuilder::finish_entry(bool with_body) {
  key_.assign(ns_);
  if (!ns_.empty()) key_.push_back('/');
  key_.append(name_);
  EntryParts parts;
  parts.key = key_;
  parts.ns_len = ns_.size();
  parts.resource_version = rv_;
  parts.owners = owners_;
  parts.controller = controller_;
  if (with_body) {
    parts.labels = labels_;
    parts.uid = uid_;
    parts.flags = flags_;
    parts.packed = buf_;
  }
  return build_entry(parts);
}

}  // namespace kube::store_detail
