// What the reconciler reads, behind a small interface: informer stores in the operator
// (controller::NamespacedCache), or straight from a kube::Client in unit tests and local mode
// (ClientCache).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kube/client.h"

namespace mpijob {

class Cache {
 public:
  virtual ~Cache() = default;
  virtual std::optional<kube::Object> get(const kube::Resource& r, const std::string& ns,
                                          const std::string& name) = 0;
  virtual std::vector<kube::Object> list(const kube::Resource& r, const std::string& ns,
                                         const std::string& label_selector) = 0;
  // Objects in ns whose controller ownerReference has this uid.
  virtual std::vector<kube::Object> controlled_by(const kube::Resource& r, const std::string& ns,
                                                  const std::string& uid) = 0;
};

// Reads through a client (every call is an API request).
class ClientCache final : public Cache {
 public:
  explicit ClientCache(kube::Client& client) : client_(client) {}
  std::optional<kube::Object> get(const kube::Resource& r, const std::string& ns,
                                  const std::string& name) override;
  std::vector<kube::Object> list(const kube::Resource& r, const std::string& ns,
                                 const std::string& label_selector) override;
  std::vector<kube::Object> controlled_by(const kube::Resource& r, const std::string& ns,
                                          const std::string& uid) override;

 private:
  kube::Client& client_;
};

}  // namespace mpijob
