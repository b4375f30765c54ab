// A kube::Client decorator that counts requests per verb into OperatorMetrics
// (mpi_operator_api_requests_total{verb}), so an idle operator can be seen to send nothing.
// A watch counts once when it is opened (it then streams without further requests).
#pragma once

#include "controller/metrics.h"
#include "kube/client.h"

namespace controller {

class CountingClient final : public kube::Client {
 public:
  CountingClient(kube::Client& inner, OperatorMetrics& metrics) : inner_(inner), metrics_(metrics) {}

  kube::Object get(const kube::Resource& r, const std::string& ns, const std::string& name) override {
    metrics_.api_request("get");
    return inner_.get(r, ns, name);
  }
  kube::ListResult list(const kube::Resource& r, const std::string& ns,
                        const kube::ListOptions& o) override {
    metrics_.api_request("list");
    return inner_.list(r, ns, o);
  }
  kube::Object create(const kube::Resource& r, const std::string& ns, const kube::Object& obj) override {
    metrics_.api_request("create");
    return inner_.create(r, ns, obj);
  }
  kube::Object update(const kube::Resource& r, const std::string& ns, const kube::Object& obj) override {
    metrics_.api_request("update");
    return inner_.update(r, ns, obj);
  }
  kube::Object update_status(const kube::Resource& r, const std::string& ns,
                             const kube::Object& obj) override {
    metrics_.api_request("update");
    return inner_.update_status(r, ns, obj);
  }
  kube::Object patch(const kube::Resource& r, const std::string& ns, const std::string& name,
                     kube::PatchType t, const std::string& body, const kube::PatchOptions& o) override {
    metrics_.api_request("patch");
    return inner_.patch(r, ns, name, t, body, o);
  }
  void remove(const kube::Resource& r, const std::string& ns, const std::string& name,
              const kube::DeleteOptions& o) override {
    metrics_.api_request("delete");
    inner_.remove(r, ns, name, o);
  }
  std::unique_ptr<kube::WatchStream> watch(const kube::Resource& r, const std::string& ns,
                                           const kube::ListOptions& o) override {
    metrics_.api_request("watch");
    return inner_.watch(r, ns, o);
  }

 private:
  kube::Client& inner_;
  OperatorMetrics& metrics_;
};

}  // namespace controller
