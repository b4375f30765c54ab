#include "launch/elastic_driver.h"

#include <fmt/format.h>

#include <algorithm>

namespace korovod::launcher {
namespace {

double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

std::string describe_hosts(const std::vector<HostSlots>& hosts) {
  return hosts.empty() ? std::string("none") : hosts_to_string(hosts);
}

std::string describe_round(const std::vector<RoundMember>& members) {
  std::string s;
  for (const RoundMember& m : members) s += fmt::format("{}{}={}", s.empty() ? "" : " ", m.worker.id(), m.place.rank);
  return s;
}

}  // namespace

ElasticDriver::ElasticDriver(ElasticOptions options, HostBlacklist blacklist, ElasticWorld& world)
    : options_(std::move(options)), blacklist_(std::move(blacklist)), world_(world) {}

bool ElasticDriver::is_member(const WorkerSlot& w) const {
  return std::any_of(members_.begin(), members_.end(), [&w](const RoundMember& m) { return m.worker == w; });
}

void ElasticDriver::fail(int exit_code, const std::string& message) {
  if (outcome_) return;
  outcome_ = ElasticOutcome{exit_code == 0 ? 1 : exit_code, message};
  world_.say(message);
}

void ElasticDriver::tick() {
  if (outcome_) return;
  const Clock::time_point now = world_.now();
  if (now >= next_discovery_) discover(now);
  if (outcome_) return;
  if (finishing_until_) {
    check_finished(now);
    return;
  }
  if (round_ > 0 && !formed_ && now >= next_ready_poll_) poll_ready(now);
  if (!outcome_) maybe_publish(now);
}

void ElasticDriver::discover(Clock::time_point now) {
  next_discovery_ = now + options_.discovery_interval;
  Result<std::vector<HostSlots>> found = world_.discover();
  if (!found.is_ok()) {
    if (!discovered_) return fail(1, found.status().message());
    if (found.status().message() != discovery_error_) world_.say(fmt::format("{} (keeping the last hosts)", found.status().message()));
    discovery_error_ = found.status().message();
    return;
  }
  if (!discovery_error_.empty()) world_.say("host discovery works again");
  discovery_error_.clear();
  discovered_ = true;
  std::vector<HostSlots> ordered = keep_host_order(hosts_, *found);
  if (compare_hosts(hosts_, ordered) == kHostsUnchanged) return;
  world_.say(fmt::format("discovered hosts: {}", describe_hosts(ordered)));
  hosts_ = std::move(ordered);
}

void ElasticDriver::poll_ready(Clock::time_point now) {
  next_ready_poll_ = now + options_.ready_poll_interval;
  for (const RoundMember& m : members_) {
    if (ready_.count(m.worker) != 0) continue;
    Result<std::optional<std::string>> value = world_.read_key(fmt::format("elastic/{}/ready/{}", round_, m.worker.id()));
    if (!value.is_ok() || !value->has_value()) continue;
    ready_.insert(m.worker);
    blacklist_.record_ready(m.worker);
    auto w = alive_.find(m.worker);
    if (w != alive_.end()) {
      w->second.ever_ready = true;
      if (m.is_new && options_.verbose) {
        world_.say(fmt::format("worker {} ready in round {}, {:.3f} s after its start", m.worker.id(), round_,
                               seconds(now - w->second.started)));
      }
    }
  }
  if (ready_.size() < members_.size()) return;
  formed_ = any_round_formed_ = true;
  world_.say(fmt::format("round {} formed: {} workers, {:.3f} s after it was published", round_, members_.size(),
                         seconds(now - round_published_)));
  for (const WorkerSlot& w : retiring_) world_.stop_worker(w);
}

RoundInputs ElasticDriver::round_inputs(Clock::time_point now, bool add_new) const {
  RoundInputs in;
  for (const RoundMember& m : members_) {
    if (alive_.count(m.worker) != 0 && !blacklist_.is_blacklisted(m.worker.host, now)) in.survivors.push_back(m.worker);
  }
  for (const HostSlots& h : hosts_) {
    if (!blacklist_.is_blacklisted(h.name, now)) in.hosts.push_back(h);
  }
  for (const auto& [w, state] : alive_) {
    if (std::find(in.survivors.begin(), in.survivors.end(), w) == in.survivors.end()) in.busy.insert(w);
  }
  in.add_new_workers = add_new;
  in.min_np = options_.min_np;
  in.max_np = options_.max_np;
  return in;
}

bool ElasticDriver::wait_for_slots(Clock::time_point now, int wanted, int available) {
  if (!short_since_) {
    short_since_ = now;
    world_.say(fmt::format("waiting for {} worker slots (available: {}) up to {} {} s", wanted, available, options_.names.elastic_timeout,
                           seconds(options_.elastic_timeout)));
  }
  if (now - *short_since_ < options_.elastic_timeout) return false;
  fail(1, fmt::format("timed out after {} {} s waiting for {} worker slots{}: {} available (hosts: {})",
                      options_.names.elastic_timeout, seconds(options_.elastic_timeout), wanted,
                      round_ == 0 ? fmt::format(" to start ({})", options_.names.start_np)
                                  : fmt::format(" ({})", options_.names.min_np),
                      available, describe_hosts(round_inputs(now, true).hosts)));
  return true;
}

void ElasticDriver::maybe_publish(Clock::time_point now) {
  if (!discovered_) return;
  for (const std::string& host : blacklist_.take_resurrected(now)) world_.say(fmt::format("host {} is back from its cooldown", host));
  const bool first = round_ == 0;
  // The same round: the same workers with the same ranks, every one of them running (a failed
  // worker's slot planned again under its old id and rank is a new process, so a new round).
  const auto same = [this](const std::vector<RoundMember>& next) {
    if (std::any_of(next.begin(), next.end(), [](const RoundMember& m) { return m.is_new; })) return false;
    return next.size() == members_.size() &&
           std::equal(next.begin(), next.end(), members_.begin(), [](const RoundMember& a, const RoundMember& b) {
             return a.worker == b.worker && a.place.rank == b.place.rank;
           });
  };
  // Survivors only first: a lost member (failed, its host blacklisted or gone) needs a round at
  // once. Additions wait until the current round has formed.
  std::vector<RoundMember> next = plan_round(round_inputs(now, first));
  if (!first && same(next)) {
    if (formed_) next = plan_round(round_inputs(now, true));
    if (!formed_ || same(next)) {
      short_since_.reset();
      return;
    }
  }
  const int wanted = first ? options_.start_np : options_.min_np;
  if (static_cast<int>(next.size()) < wanted) {
    const int available = static_cast<int>(plan_round(round_inputs(now, true)).size());
    wait_for_slots(now, wanted, available);
    return;
  }
  short_since_.reset();
  if (!first) {
    const bool state_kept = std::any_of(next.begin(), next.end(), [this](const RoundMember& m) {
      auto w = alive_.find(m.worker);
      return !m.is_new && w != alive_.end() && w->second.ever_ready;
    });
    if (any_round_formed_ && !state_kept) {
      return fail(first_failure_code_.value_or(1),
                  fmt::format("no worker that holds the training state is left for round {} (every worker of round "
                              "{} failed or was removed): unable to broadcast state",
                              round_ + 1, round_));
    }
    if (options_.reset_limit && resets_ >= *options_.reset_limit) {
      return fail(1, fmt::format("the job was stopped because the number of resets exceeded {} {}", options_.names.reset_limit,
                                 *options_.reset_limit));
    }
    ++resets_;
  }
  Status s = publish(next, now);
  if (!s.is_ok()) fail(1, fmt::format("publishing round {}: {}", round_ + 1, s.message()));
}

Status ElasticDriver::publish(const std::vector<RoundMember>& next, Clock::time_point now) {
  const int r = round_ + 1;
  for (const RoundMember& m : next) {
    Status s = world_.set_key(fmt::format("elastic/{}/assign/{}", r, m.worker.id()), assignment_value(m.place));
    if (!s.is_ok()) return s;
    ever_assigned_.insert(m.worker.id());
  }
  std::set<std::string> in_round;
  for (const RoundMember& m : next) in_round.insert(m.worker.id());
  for (const std::string& id : ever_assigned_) {
    if (in_round.count(id) != 0) continue;
    Status s = world_.set_key(fmt::format("elastic/{}/assign/{}", r, id), "removed");
    if (!s.is_ok()) return s;
  }
  Status s = world_.set_key("elastic/round", std::to_string(r));
  if (!s.is_ok()) return s;
  // Tell the workers (hosts_version) when they must reset to take the round in: it adds workers,
  // or drops live ones. A round that only drops failed workers needs no notice: their peers'
  // operations fail.
  unsigned kind = kHostsUnchanged;
  if (std::any_of(next.begin(), next.end(), [](const RoundMember& m) { return m.is_new; })) kind |= kHostsAdded;
  for (const RoundMember& m : members_) {
    if (alive_.count(m.worker) != 0 && in_round.count(m.worker.id()) == 0) {
      kind |= kHostsRemoved;
      retiring_.insert(m.worker);
      if (blacklist_.is_blacklisted(m.worker.host, now)) world_.stop_worker(m.worker);
    }
  }
  if (round_ > 0 && kind != kHostsUnchanged) {
    if (Status k = world_.set_key("elastic/hosts_kind", std::to_string(kind)); !k.is_ok()) return k;
    if (Result<int64_t> v = world_.add_to_key("elastic/hosts_version", 1); !v.is_ok()) return v.status();
  }
  round_ = r;
  members_ = next;
  ready_.clear();
  formed_ = false;
  round_published_ = now;
  next_ready_poll_ = now;
  world_.say(fmt::format("round {}: {} workers ({})", r, next.size(), describe_round(next)));
  for (const RoundMember& m : next) {
    if (!m.is_new) continue;
    Status started = world_.start_worker(m.worker);
    if (started.is_ok()) {
      alive_[m.worker] = Worker{now};
    } else {
      world_.say(fmt::format("worker {}: {}", m.worker.id(), started.message()));
      blacklist_.record_failure(m.worker, now);
      if (!first_failure_code_) first_failure_code_ = 127;
    }
  }
  return Status::ok();
}

void ElasticDriver::on_worker_exit(const WorkerSlot& w, int exit_code) {
  const Clock::time_point now = world_.now();
  alive_.erase(w);
  retiring_.erase(w);
  if (outcome_) return;
  const bool member = is_member(w);
  if (finishing_until_) {
    if (member && exit_code != 0 && !finish_failure_code_) {
      finish_failure_code_ = exit_code;
      world_.say(fmt::format("worker {} exited with code {} after training ended", w.id(), exit_code));
    }
    return;
  }
  if (!member) {
    if (options_.verbose) world_.say(fmt::format("worker {} (not in round {}) exited with code {}", w.id(), round_, exit_code));
    return;
  }
  if (exit_code == 0) {
    finishing_until_ = now + options_.elastic_timeout;
    world_.say(fmt::format("worker {} exited with code 0: training is over, waiting for the other workers", w.id()));
    for (const WorkerSlot& r : retiring_) world_.stop_worker(r);
    return;
  }
  world_.say(fmt::format("worker {} (rank {} of round {}) exited with code {}", w.id(),
                         std::find_if(members_.begin(), members_.end(), [&w](const RoundMember& m) { return m.worker == w; })->place.rank,
                         round_, exit_code));
  if (!first_failure_code_) first_failure_code_ = exit_code;
  if (blacklist_.record_failure(w, now)) {
    const std::optional<Clock::time_point> back = blacklist_.next_cooldown_end();
    world_.say(fmt::format("host {} blacklisted: its workers keep failing{}", w.host,
                           back ? fmt::format(" (cooldown ends in {:.0f} s at the latest)", seconds(*back - now)) : ""));
    for (const auto& [other, state] : alive_) {
      if (other.host == w.host) world_.stop_worker(other);
    }
  }
  const bool member_alive = std::any_of(members_.begin(), members_.end(), [this](const RoundMember& m) { return alive_.count(m.worker) != 0; });
  if (!member_alive) fail(*first_failure_code_, fmt::format("every worker of round {} has failed", round_));
}

void ElasticDriver::check_finished(Clock::time_point now) {
  if (alive_.empty()) {
    outcome_ = ElasticOutcome{finish_failure_code_.value_or(0), ""};
    if (finish_failure_code_) outcome_->message = "a worker failed after training ended";
    return;
  }
  if (now >= *finishing_until_) {
    std::string left;
    for (const auto& [w, state] : alive_) left += (left.empty() ? "" : " ") + w.id();
    fail(finish_failure_code_.value_or(1),
         fmt::format("workers {} still run {} {} s after training ended: stopping them", left, options_.names.elastic_timeout,
                     seconds(options_.elastic_timeout)));
  }
}

ElasticDriver::Clock::time_point ElasticDriver::next_wakeup() const {
  Clock::time_point next = next_discovery_;
  if (round_ > 0 && !formed_) next = std::min(next, next_ready_poll_);
  if (short_since_) next = std::min(next, *short_since_ + options_.elastic_timeout);
  if (finishing_until_) next = std::min(next, *finishing_until_);
  if (std::optional<Clock::time_point> c = blacklist_.next_cooldown_end()) next = std::min(next, *c);
  return next;
}

}  // namespace korovod::launcher
