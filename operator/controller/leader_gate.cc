#include "controller/leader_gate.h"

namespace controller {

LeaderGate::LeaderGate(kube::Client& client, LeaderElectionOptions options, Logger& log,
                       kube::Clock& clock)
    : options_(std::move(options)), log_(log), elector_(client, elector_config(), clock) {}

LeaderGate::~LeaderGate() {
  if (campaign_.joinable()) end_campaign();
}

kube::LeaderElectionConfig LeaderGate::elector_config() {
  kube::LeaderElectionConfig c;
  c.lease_namespace = options_.lease_namespace;
  c.lease_name = options_.lease_name;
  c.identity = options_.identity;
  c.lease_duration = options_.lease_duration;
  c.renew_deadline = options_.renew_deadline;
  c.retry_period = options_.retry_period;
  c.release_on_stop = true;
  c.on_started_leading = [this] {
    log_.info("successfully acquired lease", {{"lease", lease()}, {"identity", options_.identity}});
    kube::MutexLock lock(mu_);
    leading_ = true;
    leading_cv_.notify_all();
  };
  c.on_stopped_leading = [this] {
    if (stopping_) return;
    log_.error("leader election lost; exiting", {{"identity", options_.identity}});
    if (options_.on_lost) options_.on_lost();
  };
  c.on_new_leader = [this](const std::string& who) {
    if (who != options_.identity) log_.info("new leader elected", {{"leader", who}});
  };
  c.on_error = [this](const std::string& e) { log_.warning("leader election", {{"error", e}}); };
  return c;
}

bool LeaderGate::wait_until_leading(std::stop_token stop) {
  log_.info("attempting to acquire leader lease",
            {{"lease", lease()}, {"identity", options_.identity}});
  campaign_ = std::jthread([this] { elector_.run(); });
  bool led = false;
  {
    kube::MutexLock lock(mu_);
    led = leading_cv_.wait(lock, stop, [this]() KOROVOD_REQUIRES(mu_) { return leading_; });
  }
  if (!led) {
    log_.info("stopped before becoming leader");
    end_campaign();
  }
  return led;
}

void LeaderGate::release() {
  if (!campaign_.joinable()) return;
  end_campaign();
  log_.info("released leader lease", {{"identity", options_.identity}});
}

void LeaderGate::end_campaign() {
  stopping_ = true;
  elector_.stop();  // hands the lease back (release_on_stop)
  campaign_.join();
}

bool LeaderGate::lost() const {
  kube::MutexLock lock(mu_);
  return leading_ && !elector_.is_leader() && !stopping_;
}

}  // namespace controller
