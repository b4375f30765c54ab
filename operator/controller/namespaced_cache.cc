#include "controller/namespaced_cache.h"

#include "kube/label_selector.h"
#include "kube/object_meta.h"

namespace controller {
namespace {
std::string key_of(const kube::Resource& r) { return r.api_version() + "/" + r.resource; }
}  // namespace

void NamespacedCache::add(const kube::Resource& r, const std::string& ns,
                          const kube::Store& store) {
  stores_[key_of(r)][r.namespaced ? ns : ""] = &store;
}

const kube::Store* NamespacedCache::find(const kube::Resource& r, const std::string& ns) const {
  auto it = stores_.find(key_of(r));
  if (it == stores_.end()) return nullptr;
  const auto& by_ns = it->second;
  if (auto all = by_ns.find(""); all != by_ns.end()) return all->second;
  auto one = by_ns.find(ns);
  return one == by_ns.end() ? nullptr : one->second;
}

std::optional<kube::Object> NamespacedCache::get(const kube::Resource& r, const std::string& ns,
                                                 const std::string& name) {
  const kube::Store* s = find(r, r.namespaced ? ns : "");
  if (!s) return std::nullopt;
  return s->get(r.namespaced ? ns : "", name);
}

std::vector<kube::Object> NamespacedCache::list(const kube::Resource& r, const std::string& ns,
                                                const std::string& label_selector) {
  const kube::Store* s = find(r, ns);
  if (!s) return {};
  return s->list(ns, kube::LabelSelector::parse(label_selector));
}

std::vector<kube::Object> NamespacedCache::controlled_by(const kube::Resource& r,
                                                         const std::string& ns,
                                                         const std::string& uid) {
  const kube::Store* s = find(r, ns);
  if (!s) return {};
  std::vector<kube::Object> out;
  for (auto& o : s->by_controller(uid)) {
    if (kube::namespace_of(o) == ns) out.push_back(std::move(o));
  }
  return out;
}

}  // namespace controller
