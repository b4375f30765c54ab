#include "mpijob/cache.h"

#include "mpijob/types.h"

namespace mpijob {

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

}  // namespace mpijob
