#include "controller/leader_election.h"

#include <fmt/format.h>

#include "kube/object_meta.h"

namespace controller {

std::string format_micro_time(std::chrono::system_clock::time_point t) {
  using namespace std::chrono;
  const auto us = duration_cast<microseconds>(t.time_since_epoch()).count() % 1'000'000;
  const std::string s = kube::format_time(t);
  return s.substr(0, s.size() - 1) + fmt::format(".{:06d}Z", us);
}

bool LeaderElector::try_acquire_or_renew() {
  const auto& leases = kube::resources::kLeases;
  const auto now = clock_.now();
  const auto steady = clock_.steady_now();
  const int duration_s = static_cast<int>(
      std::chrono::duration_cast<std::chrono::seconds>(config_.lease_duration).count());
  kube::Object lease;
  try {
    lease = client_.get(leases, config_.lock_namespace, config_.lease_name);
  } catch (const kube::ApiError& e) {
    if (!kube::is_not_found(e)) throw;
    kube::Object fresh = {
        {"apiVersion", "coordination.k8s.io/v1"},
        {"kind", "Lease"},
        {"metadata", {{"name", config_.lease_name}, {"namespace", config_.lock_namespace}}},
        {"spec",
         {{"holderIdentity", config_.identity},
          {"leaseDurationSeconds", duration_s},
          {"acquireTime", format_micro_time(now)},
          {"renewTime", format_micro_time(now)},
          {"leaseTransitions", 0}}}};
    try {
      client_.create(leases, config_.lock_namespace, fresh);
    } catch (const kube::ApiError& ce) {
      if (kube::is_already_exists(ce)) return false;
      throw;
    }
    std::lock_guard lock(mu_);
    observed_spec_ = fresh["spec"];
    observed_at_ = last_renew_ = steady;
    leader_ = true;
    return true;
  }
  const kube::Object spec = lease.value("spec", kube::Object::object());
  const std::string holder = spec.value("holderIdentity", "");
  int held_for = spec.value("leaseDurationSeconds", duration_s);
  {
    std::lock_guard lock(mu_);
    if (spec != observed_spec_) {
      observed_spec_ = spec;
      observed_at_ = steady;
    }
    if (!holder.empty() && holder != config_.identity &&
        observed_at_ + std::chrono::seconds(held_for) > steady) {
      leader_ = false;
      return false;  // someone else holds a live lease
    }
  }
  kube::Object updated = lease;
  auto& s = updated["spec"];
  if (holder != config_.identity) {
    s["acquireTime"] = format_micro_time(now);
    s["leaseTransitions"] = spec.value("leaseTransitions", 0) + (holder.empty() ? 0 : 1);
  }
  s["holderIdentity"] = config_.identity;
  s["leaseDurationSeconds"] = duration_s;
  s["renewTime"] = format_micro_time(now);
  try {
    kube::Object written = client_.update(leases, config_.lock_namespace, updated);
    std::lock_guard lock(mu_);
    observed_spec_ = written.value("spec", kube::Object::object());
    observed_at_ = last_renew_ = clock_.steady_now();
    leader_ = true;
    return true;
  } catch (const kube::ApiError& e) {
    if (kube::is_conflict(e)) return false;
    throw;
  }
}

bool LeaderElector::sleep(std::stop_token& stop, std::chrono::milliseconds d) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, stop, d, [] { return false; });
  return !stop.stop_requested();
}

bool LeaderElector::acquire(std::stop_token stop) {
  log_.info("attempting to acquire leader lease",
            {{"lease", config_.lock_namespace + "/" + config_.lease_name},
             {"identity", config_.identity}});
  bool waiting_logged = false;
  while (!stop.stop_requested()) {
    try {
      if (try_acquire_or_renew()) {
        log_.info("successfully acquired lease", {{"identity", config_.identity}});
        return true;
      }
      if (!waiting_logged) {
        std::string holder;
        {
          std::lock_guard lock(mu_);
          holder = observed_spec_.value("holderIdentity", "");
        }
        log_.info("lease is held by another candidate; waiting", {{"holder", holder}});
        waiting_logged = true;
      }
    } catch (const std::exception& e) {
      log_.warning("error acquiring lease", {{"error", e.what()}});
    }
    if (!sleep(stop, config_.retry_period)) break;
  }
  return false;
}

void LeaderElector::keep_renewing(std::stop_token stop, const std::function<void()>& on_lost) {
  while (sleep(stop, config_.retry_period)) {
    const auto deadline = clock_.steady_now() + config_.renew_deadline;
    bool renewed = false;
    while (!renewed && !stop.stop_requested()) {
      try {
        renewed = try_acquire_or_renew();
      } catch (const std::exception& e) {
        log_.warning("error renewing lease", {{"error", e.what()}});
      }
      if (renewed || clock_.steady_now() >= deadline) break;
      sleep(stop, std::chrono::milliseconds(500));
    }
    if (!renewed && !stop.stop_requested()) {
      {
        std::lock_guard lock(mu_);
        leader_ = false;
      }
      on_lost();
      return;
    }
  }
}

void LeaderElector::release() {
  {
    std::lock_guard lock(mu_);
    if (!leader_) return;
    leader_ = false;
  }
  try {
    kube::Object lease = client_.get(kube::resources::kLeases, config_.lock_namespace,
                                      config_.lease_name);
    if (lease["spec"].value("holderIdentity", "") != config_.identity) return;
    lease["spec"]["holderIdentity"] = "";
    lease["spec"]["leaseDurationSeconds"] = 1;
    lease["spec"]["renewTime"] = format_micro_time(clock_.now());
    client_.update(kube::resources::kLeases, config_.lock_namespace, lease);
    log_.info("released leader lease", {{"identity", config_.identity}});
  } catch (const std::exception& e) {
    log_.warning("could not release lease", {{"error", e.what()}});
  }
}

std::chrono::steady_clock::duration LeaderElector::since_last_renew() const {
  std::lock_guard lock(mu_);
  return clock_.steady_now() - last_renew_;
}

bool LeaderElector::is_leader() const {
  std::lock_guard lock(mu_);
  return leader_;
}

}  // namespace controller
