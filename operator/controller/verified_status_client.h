// A kube::Client decorator for the reconciler's status writes. When update_status fails
// without an answer (no connection, the connection cut after the request went out: ApiError
// code 0), or with 409 Conflict (what the REST client's own retry of a PUT that had landed
// gets back), the write may or may not have been applied. The reconciler reports a transition's
// events only after its status write succeeded, and the next sync sees no transition once the
// write landed, so an unanswered write that landed would lose those events for good. This
// client reads the object back (retrying while the API server is away, up to verify_for) and,
// if it carries exactly the status that was sent under a new resourceVersion, returns it as the
// write's answer. Otherwise the original error is thrown, as before. Every other call passes
// through unchanged.
// Not ours: a status this client already got an answer for. Two syncs of one job racing on a
// stale cache compute the same status (times have second precision); the second one's 409 is a
// real conflict, its transition already reported by the first. So the resourceVersion of each
// answered write is remembered per object, and a read-back showing it is not taken as landed.
#pragma once

#include <chrono>
#include <mutex>
#include <string>
#include <unordered_map>

#include "kube/client.h"
#include "kube/clock.h"
#include "kube/mutex.h"

namespace controller {

class VerifiedStatusClient final : public kube::Client {
 public:
  VerifiedStatusClient(kube::Client& inner, kube::Clock& clock,
                       std::chrono::milliseconds verify_for = std::chrono::seconds(30))
      : inner_(inner), clock_(clock), verify_for_(verify_for) {}

  kube::Object update_status(const kube::Resource& r, const std::string& ns,
                             const kube::Object& obj) override;

  kube::Object get(const kube::Resource& r, const std::string& ns, const std::string& name) override {
    return inner_.get(r, ns, name);
  }
  kube::ListResult list(const kube::Resource& r, const std::string& ns,
                        const kube::ListOptions& o) override {
    return inner_.list(r, ns, o);
  }
  kube::Object create(const kube::Resource& r, const std::string& ns, const kube::Object& obj) override {
    return inner_.create(r, ns, obj);
  }
  kube::Object update(const kube::Resource& r, const std::string& ns, const kube::Object& obj) override {
    return inner_.update(r, ns, obj);
  }
  kube::Object patch(const kube::Resource& r, const std::string& ns, const std::string& name,
                     kube::PatchType t, const std::string& body, const kube::PatchOptions& o) override {
    return inner_.patch(r, ns, name, t, body, o);
  }
  void remove(const kube::Resource& r, const std::string& ns, const std::string& name,
              const kube::DeleteOptions& o) override {
    inner_.remove(r, ns, name, o);
  }
  std::unique_ptr<kube::WatchStream> watch(const kube::Resource& r, const std::string& ns,
                                           const kube::ListOptions& o) override {
    return inner_.watch(r, ns, o);
  }

 private:
  void answered(const kube::Object& written);
  bool answered_before(const kube::Object& current);

  kube::Client& inner_;
  kube::Clock& clock_;
  const std::chrono::milliseconds verify_for_;
  kube::Mutex mu_;
  // namespace/name -> resourceVersion of the last status write answered to this client.
  std::unordered_map<std::string, std::string> answered_rv_ KOROVOD_GUARDED_BY(mu_);
};

}  // namespace controller
