#include "mpijob/cache.h"

#include "kube/label_selector.h"
#include "mpijob/types.h"

namespace mpijob {
namespace {

std::string key_of(const kube::Resource& r) { return r.api_version() + "/" + r.resource; }

std::vector<kube::Object> in_namespace(std::vector<kube::Object> objs, const std::string& ns) {
  std::erase_if(objs, [&](const kube::Object& o) {
    return member<std::string>(child(o, "metadata"), "namespace").value_or("") != ns;
  });
  return objs;
}

}  // namespace

std::optional<kube::Object> ClientCache::get(const kube::Resource& r, const std::string& ns,
                                             const std::string& name) {
  try {
    return client_.get(r, ns, name);
  } catch (const kube::ApiError& e) {
    if (kube::is_not_found(e)) return std::nullopt;
    throw;
  }
}

std::vector<kube::Object> ClientCache::list(const kube::Resource& r, const std::string& ns,
                                            const std::string& label_selector) {
  kube::ListOptions opts;
  opts.label_selector = label_selector;
  try {
    return client_.list(r, ns, opts).items;
  } catch (const kube::ApiError& e) {
    if (kube::is_not_found(e)) return {};  // e.g. a PodGroup CRD that is not installed
    throw;
  }
}

std::vector<kube::Object> ClientCache::controlled_by(const kube::Resource& r, const std::string& ns,
                                                     const std::string& uid) {
  std::vector<kube::Object> out;
  for (auto& o : list(r, ns, "")) {
    if (is_controlled_by(o, uid)) out.push_back(std::move(o));
  }
  return out;
}

void StoreCache::add(const kube::Resource& r, const kube::Store& store) { stores_[key_of(r)] = &store; }

const kube::Store* StoreCache::find(const kube::Resource& r) const {
  auto it = stores_.find(key_of(r));
  return it == stores_.end() ? nullptr : it->second;
}

std::optional<kube::Object> StoreCache::get(const kube::Resource& r, const std::string& ns,
                                            const std::string& name) {
  const kube::Store* s = find(r);
  return s ? s->get(r.namespaced ? ns : "", name) : std::nullopt;
}

std::vector<kube::Object> StoreCache::list(const kube::Resource& r, const std::string& ns,
                                           const std::string& label_selector) {
  const kube::Store* s = find(r);
  return s ? s->list(ns, kube::LabelSelector::parse(label_selector)) : std::vector<kube::Object>{};
}

std::vector<kube::Object> StoreCache::controlled_by(const kube::Resource& r, const std::string& ns,
                                                    const std::string& uid) {
  const kube::Store* s = find(r);
  return s ? in_namespace(s->by_controller(uid), ns) : std::vector<kube::Object>{};
}

}  // namespace mpijob
