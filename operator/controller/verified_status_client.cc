#include "controller/verified_status_client.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <optional>

#include "kube/object_meta.h"

namespace controller {
namespace {

bool unanswered(const kube::ApiError& e) { return e.code() == 0; }

// Worth reading back: no answer, or 409 Conflict, which is also what a write that landed
// returns when the REST client sent it again after the connection broke (PUT counts as
// idempotent there; the retry's resourceVersion precondition then fails on our own write).
bool may_have_landed(const kube::ApiError& e) { return unanswered(e) || kube::is_conflict(e); }

}  // namespace

void VerifiedStatusClient::answered(const kube::Object& written) {
  kube::MutexLock lock(mu_);
  if (answered_rv_.size() > 100000) answered_rv_.clear();  // deleted jobs' entries, now and then
  answered_rv_[kube::object_key(written)] = kube::resource_version_of(written);
}

bool VerifiedStatusClient::answered_before(const kube::Object& current) {
  kube::MutexLock lock(mu_);
  auto it = answered_rv_.find(kube::object_key(current));
  return it != answered_rv_.end() && it->second == kube::resource_version_of(current);
}

kube::Object VerifiedStatusClient::update_status(const kube::Resource& r, const std::string& ns,
                                                 const kube::Object& obj) {
  try {
    kube::Object written = inner_.update_status(r, ns, obj);
    answered(written);
    return written;
  } catch (const kube::ApiError& e) {
    if (!may_have_landed(e)) throw;
    const std::string sent_rv = kube::resource_version_of(obj);
    const kube::Object sent_status = obj.value("status", kube::Object::object());
    kube::Mutex mu;
    std::condition_variable cv;
    kube::MutexLock lock(mu);
    const auto deadline = clock_.steady_now() + verify_for_;
    auto pause = std::chrono::milliseconds(200);
    for (;;) {
      std::optional<kube::Object> current;
      try {
        current = inner_.get(r, ns, kube::name_of(obj));
      } catch (const kube::ApiError& ge) {
        if (!unanswered(ge) && ge.code() < 500 && ge.code() != 429) throw e;  // e.g. deleted
      }
      if (current) {
        const bool landed = kube::resource_version_of(*current) != sent_rv &&
                            current->value("status", kube::Object::object()) == sent_status &&
                            !answered_before(*current);
        if (landed) {
          answered(*current);
          return *current;
        }
        throw e;  // not applied (or overwritten since): the caller syncs again
      }
      if (clock_.steady_now() + pause > deadline) throw e;
      clock_.wait_until(lock, cv, clock_.steady_now() + pause, [] { return false; });
      pause = std::min(pause * 2, std::chrono::milliseconds(2000));
    }
  }
}

}  // namespace controller
