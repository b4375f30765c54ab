#include "kube/leader_election.h"

#include <stdexcept>

#include "kube/api_error.h"
#include "kube/object_meta.h"

namespace kube {

LeaderElector::LeaderElector(Client& client, LeaderElectionConfig config, Clock& clock)
    : client_(client), config_(std::move(config)), clock_(clock) {
  if (config_.lease_name.empty() || config_.lease_namespace.empty() || config_.identity.empty())
    throw std::invalid_argument("leader election needs a lease name, namespace and identity");
  if (config_.lease_duration <= config_.renew_deadline)
    throw std::invalid_argument("leader election: lease duration must exceed renew deadline");
  if (config_.retry_period <= std::chrono::seconds(0) ||
      config_.renew_deadline <= config_.retry_period)
    throw std::invalid_argument("leader election: renew deadline must exceed retry period > 0");
}

bool LeaderElector::is_leader() const {
  MutexLock lock(mu_);
  return leader_;
}

std::string LeaderElector::observed_leader() const {
  MutexLock lock(mu_);
  return observed_holder_;
}

void LeaderElector::report(const std::string& what) const {
  if (config_.on_error) config_.on_error(what);
}

void LeaderElector::stop() {
  stopped_ = true;
  MutexLock lock(mu_);
  cv_.notify_all();
}

bool LeaderElector::wait_retry_period() {
  MutexLock lock(mu_);
  clock_.wait_until(lock, cv_, clock_.steady_now() + config_.retry_period,
                    [&] { return stopped_.load(); });
  return !stopped_;
}

Object LeaderElector::lease_object(const std::string& acquire_time, int transitions) const {
  return {{"apiVersion", "coordination.k8s.io/v1"},
          {"kind", "Lease"},
          {"metadata", {{"name", config_.lease_name}, {"namespace", config_.lease_namespace}}},
          {"spec",
           {{"holderIdentity", config_.identity},
            {"leaseDurationSeconds", config_.lease_duration.count()},
            {"acquireTime", acquire_time},
            {"renewTime", format_micro_time(clock_.now())},
            {"leaseTransitions", transitions}}}};
}

void LeaderElector::observe(const Object& spec) {
  const std::string holder = spec.value("holderIdentity", "");
  const std::string renew = spec.value("renewTime", "");
  bool new_leader = false;
  {
    MutexLock lock(mu_);
    if (holder != observed_holder_ || renew != observed_renew_time_) {
      new_leader = holder != observed_holder_;
      observed_holder_ = holder;
      observed_renew_time_ = renew;
      observed_at_ = clock_.steady_now();
    }
  }
  if (new_leader && config_.on_new_leader && !holder.empty()) config_.on_new_leader(holder);
}

bool LeaderElector::try_acquire_or_renew() {
  const Resource& leases = resources::kLeases;
  const std::string now = format_micro_time(clock_.now());
  Object current;
  try {
    current = client_.get(leases, config_.lease_namespace, config_.lease_name);
  } catch (const ApiError& e) {
    if (!is_not_found(e)) throw;
    client_.create(leases, config_.lease_namespace, lease_object(now, 0));
    observe(lease_object(now, 0)["spec"]);
    return true;
  }
  const Object spec = current.value("spec", Object::object());
  observe(spec);
  const std::string holder = spec.value("holderIdentity", "");
  const bool mine = holder == config_.identity;
  if (!holder.empty() && !mine) {
    MutexLock lock(mu_);
    const auto duration = std::chrono::seconds(spec.value("leaseDurationSeconds", 0));
    if (observed_at_ + duration > clock_.steady_now()) return false;  // held, not expired
  }
  const int transitions = spec.value("leaseTransitions", 0);
  Object next = lease_object(mine ? spec.value("acquireTime", now) : now,
                             mine ? transitions : transitions + 1);
  next["metadata"] = current["metadata"];  // resourceVersion: a racing candidate gets 409
  try {
    observe(client_.update(leases, config_.lease_namespace, next)["spec"]);
  } catch (const ApiError& e) {
    if (is_conflict(e)) return false;
    throw;
  }
  return true;
}

bool LeaderElector::renew_within_deadline() {
  const auto deadline = clock_.steady_now() + config_.renew_deadline;
  while (!stopped_) {
    try {
      if (try_acquire_or_renew()) return true;
    } catch (const std::exception& e) {
      report(std::string("renewing lease failed: ") + e.what());
    }
    if (clock_.steady_now() + config_.retry_period > deadline) return false;
    if (!wait_retry_period()) return false;
  }
  return false;
}

void LeaderElector::run() {
  while (!stopped_) {  // acquire
    try {
      if (try_acquire_or_renew()) break;
    } catch (const std::exception& e) {
      report(std::string("acquiring lease failed: ") + e.what());
    }
    if (!wait_retry_period()) return;
  }
  if (stopped_) return;
  {
    MutexLock lock(mu_);
    leader_ = true;
  }
  if (config_.on_started_leading) config_.on_started_leading();
  while (wait_retry_period() && renew_within_deadline()) {
  }
  {
    MutexLock lock(mu_);
    leader_ = false;
  }
  if (stopped_ && config_.release_on_stop) release();
  if (config_.on_stopped_leading) config_.on_stopped_leading();
}

void LeaderElector::release() {
  try {
    Object current = client_.get(resources::kLeases, config_.lease_namespace, config_.lease_name);
    if (current.value("spec", Object::object()).value("holderIdentity", "") != config_.identity)
      return;
    const std::string now = format_micro_time(clock_.now());
    current["spec"]["holderIdentity"] = "";
    current["spec"]["leaseDurationSeconds"] = 1;
    current["spec"]["renewTime"] = now;
    current["spec"]["acquireTime"] = now;
    client_.update(resources::kLeases, config_.lease_namespace, current);
  } catch (const std::exception& e) {
    report(std::string("releasing lease failed: ") + e.what());
  }
}

}  // namespace kube
