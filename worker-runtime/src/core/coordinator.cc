#include "core/coordinator.h"

#include <algorithm>

#include "core/response_builder.h"

namespace korovod {

Coordinator::Coordinator(std::vector<int> global_ranks, StallOptions stall, const Clock& clock,
                         const Logger& log, Timeline* timeline)
    : global_ranks_(std::move(global_ranks)),
      clock_(clock),
      timeline_(timeline),
      stall_(stall, clock, log),
      stall_check_interval_s_(stall.enabled ? std::min({1.0, stall.warning_seconds / 4,
                                                        stall.shutdown_seconds > 0 ? stall.shutdown_seconds / 4 : 1.0})
                                            : -1.0),
      last_stall_check_(clock.now()),
      joined_(global_ranks_.size(), false) {}

bool Coordinator::stall_check_due() const {
  if (table_.empty() || stall_check_interval_s_ < 0) return false;
  return std::chrono::duration<double>(clock_.now() - last_stall_check_).count() >= stall_check_interval_s_;
}

int Coordinator::joined_count() const {
  return static_cast<int>(std::count(joined_.begin(), joined_.end(), true));
}

void Coordinator::add_join(int set_rank) {
  joined_[set_rank] = true;
  last_joined_ = global_ranks_[set_rank];
}

void Coordinator::add_requests(int set_rank, const std::vector<Request>& requests) {
  for (const Request& req : requests) {
    if (req.type == RequestType::kJoin) {
      add_join(set_rank);
      continue;
    }
    auto [it, inserted] = table_.try_emplace(req.name);
    if (inserted) {
      it->second.by_rank.resize(global_ranks_.size());
      it->second.first_seen = clock_.now();
      order_.push_back(req.name);
      if (timeline_) timeline_->negotiate_start(req.name, req.type);
    }
    it->second.by_rank[set_rank] = req;
    if (timeline_) timeline_->negotiate_rank_ready(req.name, global_ranks_[set_rank]);
  }
}

bool Coordinator::ready(const Pending& p) const {
  for (size_t r = 0; r < p.by_rank.size(); ++r) {
    if (!p.by_rank[r] && !joined_[r]) return false;
  }
  return true;
}

const Request& Coordinator::first_request(const Pending& p) {
  return **std::find_if(p.by_rank.begin(), p.by_rank.end(), [](const auto& r) { return r.has_value(); });
}

void Coordinator::settle(int32_t group, int32_t group_size, std::optional<Response> resp,
                         std::vector<Response>& out) {
  if (group < 0 || group_size <= 1) {
    if (resp) out.push_back(std::move(*resp));
    return;
  }
  HeldGroup& held = held_groups_[group];
  if (resp) held.ready.push_back(std::move(*resp));
  if (++held.settled < group_size) return;
  for (auto& r : held.ready) out.push_back(std::move(r));
  held_groups_.erase(group);
}

void Coordinator::release_ready(std::vector<Response>& out) {
  std::vector<std::string> still_pending;
  for (const std::string& name : order_) {
    auto it = table_.find(name);
    Pending& p = it->second;
    if (!ready(p)) {
      still_pending.push_back(name);
      continue;
    }
    const Request& first = first_request(p);
    const int32_t group = first.group_id, group_size = first.group_size;
    Response resp = build_response(name, p.by_rank, global_ranks_);
    if (timeline_) timeline_->negotiate_end(name);
    table_.erase(it);
    settle(group, group_size, std::move(resp), out);
  }
  order_ = std::move(still_pending);
}

void Coordinator::fail_stalled(std::vector<Response>& out) {
  std::vector<PendingTensor> pending;
  for (const std::string& name : order_) {
    const Pending& p = table_.at(name);
    PendingTensor t{name, p.first_seen, {}};
    for (size_t r = 0; r < p.by_rank.size(); ++r) {
      if (!p.by_rank[r] && !joined_[r]) t.missing_global_ranks.push_back(global_ranks_[r]);
    }
    pending.push_back(std::move(t));
  }
  for (auto& [name, message] : stall_.inspect(pending)) {
    auto it = table_.find(name);
    const Request& first = first_request(it->second);
    const int32_t group = first.group_id, group_size = first.group_size;
    table_.erase(it);
    order_.erase(std::find(order_.begin(), order_.end(), name));
    if (timeline_) timeline_->negotiate_end(name);
    out.push_back(error_response(name, message));
    // A failed member settles its group too: the members already ready are released with the
    // last one rather than held for a member that will never come.
    settle(group, group_size, std::nullopt, out);
  }
}

std::vector<Response> Coordinator::take_ready() {
  std::vector<Response> out;
  release_ready(out);
  fail_stalled(out);
  last_stall_check_ = clock_.now();
  if (joined_count() == static_cast<int>(joined_.size())) {
    Response join;
    join.type = ResponseType::kJoin;
    join.names = {"join"};
    join.last_joined_rank = last_joined_;
    out.push_back(std::move(join));
    std::fill(joined_.begin(), joined_.end(), false);
    last_joined_ = -1;
  }
  return out;
}

}  // namespace korovod
