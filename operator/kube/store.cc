#include "kube/store.h"

#include <algorithm>
#include <mutex>

#include "kube/entry_builder.h"
#include "kube/object_meta.h"
#include "kube/store_index.h"

namespace kube {

using store_detail::StoreIndex;

ObjectEvent::ObjectEvent(const Object& obj)
    : entry_(nullptr), given_(&obj), header_(store_detail::EntryBuilder::header(obj)) {
  entry_ = header_.get();
}
ObjectEvent::ObjectEvent(ObjectEvent&&) noexcept = default;
ObjectEvent& ObjectEvent::operator=(ObjectEvent&&) noexcept = default;
ObjectEvent::~ObjectEvent() = default;

std::vector<OwnerRef> ObjectEvent::owners() const {
  std::vector<OwnerRef> out;
  entry_->for_each_owner([&](const OwnerRef& r) { out.push_back(r); });
  return out;
}

std::optional<OwnerRef> ObjectEvent::controller() const {
  std::optional<OwnerRef> out;
  entry_->for_each_owner([&](const OwnerRef& r) {
    if (r.controller) out = r;
  });
  return out;
}

const Object& ObjectEvent::object() const {
  if (given_) return *given_;
  if (!decoded_) decoded_ = store_->decode(entry_);
  return *decoded_;
}

Store::Diff::Diff() = default;
Store::Diff::Diff(Diff&&) noexcept = default;
Store::Diff::~Diff() = default;

Store::Store(StoreOptions options)
    : options_(std::move(options)),
      state_(std::make_unique<StoreIndex>()),
      builder_(std::make_unique<store_detail::EntryBuilder>(
          options_.strip_managed_fields,
          [this](std::string_view k, std::string_view a) { return is_store_type(k, a); })) {}

Store::~Store() = default;

Store::EntryPtr Store::make_entry(const Object& obj) {
  if (!options_.transform) return builder_->build(obj);
  Object o = obj;
  if (options_.strip_managed_fields && o.contains("metadata") && o["metadata"].is_object())
    o["metadata"].erase("managedFields");
  options_.transform(o);
  return builder_->build(o);
}

bool Store::is_store_type(std::string_view kind, std::string_view api_version) {
  if (!type_set_) {
    // Set once, before any entry that relies on it is visible to readers.
    WriterLock lock(mu_);
    kind_ = kind;
    api_version_ = api_version;
    type_set_ = true;
  }
  return kind == kind_ && api_version == api_version_;
}

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
  ReaderLock lock(mu_);
  const Entry* e = state_->find(key);
  if (!e) return std::nullopt;
  return decode(e);
}

std::vector<Object> Store::list(const std::string& ns, const LabelSelector& selector) const {
  ReaderLock lock(mu_);
  // Start from the smallest index that must contain every match, then filter.
  const std::vector<const Entry*>* candidates = nullptr;
  static const std::vector<const Entry*> kEmpty;  // a constant, not state
  auto narrow = [&](const StoreIndex::Index& idx, const std::string& k) {
    auto it = idx.find(k);
    const auto* set = it == idx.end() ? &kEmpty : &it->second;
    if (!candidates || set->size() < candidates->size()) candidates = set;
  };
  if (!ns.empty()) narrow(state_->by_ns(), ns);
  for (const auto& r : selector.requirements())
    if (r.op == LabelRequirement::Op::Equals || (r.op == LabelRequirement::Op::In && r.values.size() == 1))
      narrow(state_->by_label(), StoreIndex::label_key(r.key, r.values[0]));
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
    state_->for_each(consider);
  }
  return decode_sorted(std::move(hits));
}

std::vector<Object> Store::owned(const std::string& uid, bool controller_only) const {
  ReaderLock lock(mu_);
  std::vector<const Entry*> hits;
  auto it = state_->by_owner().find(uid);
  if (it != state_->by_owner().end())
    for (const Entry* e : it->second)
      if (!controller_only || e->controlled_by(uid)) hits.push_back(e);
  return decode_sorted(std::move(hits));
}

std::vector<Object> Store::by_owner(const std::string& uid) const { return owned(uid, false); }
std::vector<Object> Store::by_controller(const std::string& uid) const { return owned(uid, true); }

std::vector<std::string> Store::keys() const {
  ReaderLock lock(mu_);
  std::vector<std::string> out;
  out.reserve(state_->size());
  state_->for_each([&](const Entry* e) { out.emplace_back(e->key()); });
  std::sort(out.begin(), out.end());
  return out;
}

size_t Store::size() const {
  ReaderLock lock(mu_);
  return state_->size();
}

size_t Store::approx_bytes() const {
  ReaderLock lock(mu_);
  return state_->approx_bytes();
}

Store::Diff Store::upsert(const Object& obj) {
  EntryPtr e = make_entry(obj);  // the expensive part, outside the lock
  const Entry* now = e.get();
  Diff diff;
  {
    WriterLock lock(mu_);
    diff.replaced_ = state_->put(std::move(e));
  }
  if (diff.replaced_)
    diff.updated.emplace_back(ObjectEvent(diff.replaced_.get(), this), ObjectEvent(now, this));
  else
    diff.added.push_back(ObjectEvent(now, this));
  return diff;
}

Store::Diff Store::erase(const Object& obj) {
  const std::string key = object_key(obj);
  Diff diff;
  {
    WriterLock lock(mu_);
    diff.replaced_ = state_->take(key);
  }
  if (diff.replaced_) diff.deleted.push_back(ObjectEvent(diff.replaced_.get(), this));
  return diff;
}

Store::Diff Store::replace(std::vector<Object> objects, bool report,
                           const std::function<void()>& swapped) {
  std::vector<EntryPtr> made;
  made.reserve(objects.size());
  for (const auto& o : objects) made.push_back(make_entry(o));
  made = store_detail::pack_into_blocks(std::move(made));  // before the objects go: see EntryBlock
  objects.clear();
  objects.shrink_to_fit();
  return swap_in(std::move(made), report, swapped);
}

Store::Diff Store::swap_in(std::vector<EntryPtr> made, bool report,
                           const std::function<void()>& swapped) {
  auto next = std::make_unique<StoreIndex>();
  for (auto& e : made) next->put(std::move(e));
  made.clear();
  made.shrink_to_fit();
  next->shrink();
  const StoreIndex* now = next.get();
  Diff diff;
  {
    WriterLock lock(mu_);
    diff.old_ = std::exchange(state_, std::move(next));
  }
  if (swapped) swapped();
  if (!report) {
    diff.old_.reset();  // the old entries are freed here, outside the lock
    return diff;
  }
  // Reading the states needs no lock: this is the only writer. The Diff keeps the old one.
  now->for_each([&](const Entry* e) {
    const Entry* prev = diff.old_->find(e->key());
    if (!prev)
      diff.added.push_back(ObjectEvent(e, this));
    else if (prev->resource_version() != e->resource_version())
      diff.updated.emplace_back(ObjectEvent(prev, this), ObjectEvent(e, this));
  });
  diff.old_->for_each([&](const Entry* e) {
    if (!now->find(e->key())) diff.deleted.push_back(ObjectEvent(e, this));
  });
  return diff;
}

}  // namespace kube
