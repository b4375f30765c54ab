// mpijob::Cache over informer stores that may each cover one namespace (a --namespace list) or
// all of them (""). Cluster-scoped resources have one store under "". Stores are registered
// before the reconcilers start and never change afterwards.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kube/store.h"
#include "mpijob/cache.h"

namespace controller {

class NamespacedCache final : public mpijob::Cache {
 public:
  // `ns` "" = the store holds every namespace.
  void add(const kube::Resource& r, const std::string& ns, const kube::Store& store);

  std::optional<kube::Object> get(const kube::Resource& r, const std::string& ns,
                                  const std::string& name) override;
  std::vector<kube::Object> list(const kube::Resource& r, const std::string& ns,
                                 const std::string& label_selector) override;
  std::vector<kube::Object> controlled_by(const kube::Resource& r, const std::string& ns,
                                          const std::string& uid) override;

 private:
  const kube::Store* find(const kube::Resource& r, const std::string& ns) const;
  // api_version/resource -> ns -> store; set up once
  std::map<std::string, std::map<std::string, const kube::Store*>> stores_;
};

}  // namespace controller
