#include "core/process_set.h"

#include <algorithm>

namespace korovod {

Backend* ProcessSet::backend_for(int device) const {
  for (const auto& b : backends) {
    if (b->enabled(device)) return b.get();
  }
  return nullptr;
}

int ProcessSet::set_rank_of(int global_rank) const {
  auto it = std::find(ranks.begin(), ranks.end(), global_rank);
  return it == ranks.end() ? -1 : static_cast<int>(it - ranks.begin());
}

Result<std::shared_ptr<ProcessSet>> create_process_set(int id, std::vector<int> ranks, int my_rank,
                                                       const ProcessSetDeps& deps) {
  auto set = std::make_shared<ProcessSet>();
  set->id = id;
  set->ranks = std::move(ranks);
  set->set_rank = set->set_rank_of(my_rank);
  if (!set->member()) return set;
  Result<std::unique_ptr<ControlChannel>> control = deps.transport.create_control(set->ranks, id);
  if (!control.is_ok()) return control.status();
  set->control = std::move(control).value();
  for (const auto& provider : deps.backends) {
    Result<std::unique_ptr<Backend>> backend = provider->create_backend(set->ranks, id);
    if (!backend.is_ok()) return backend.status();
    set->backends.push_back(std::move(backend).value());
  }
  NegotiatorOptions options = deps.negotiation;
  options.global_ranks = set->ranks;
  set->negotiator = std::make_unique<Negotiator>(*set->control, options, deps.clock, deps.log,
                                                 id == 0 ? deps.timeline : nullptr);
  return set;
}

void ProcessSetTable::insert(std::shared_ptr<ProcessSet> set) {
  std::lock_guard lock(mu_);
  sets_[set->id] = std::move(set);
}

std::shared_ptr<ProcessSet> ProcessSetTable::get(int id) const {
  std::lock_guard lock(mu_);
  auto it = sets_.find(id);
  return it == sets_.end() ? nullptr : it->second;
}

std::shared_ptr<ProcessSet> ProcessSetTable::erase(int id) {
  std::lock_guard lock(mu_);
  auto it = sets_.find(id);
  if (it == sets_.end()) return nullptr;
  auto set = std::move(it->second);
  sets_.erase(it);
  return set;
}

std::vector<std::shared_ptr<ProcessSet>> ProcessSetTable::members_in_id_order() const {
  std::lock_guard lock(mu_);
  std::vector<std::shared_ptr<ProcessSet>> out;
  for (const auto& [id, set] : sets_) {
    if (set->member()) out.push_back(set);
  }
  return out;
}

std::vector<std::shared_ptr<ProcessSet>> ProcessSetTable::all() const {
  std::lock_guard lock(mu_);
  std::vector<std::shared_ptr<ProcessSet>> out;
  for (const auto& [id, set] : sets_) out.push_back(set);
  return out;
}

std::vector<int> ProcessSetTable::ids() const {
  std::lock_guard lock(mu_);
  std::vector<int> out;
  for (const auto& [id, set] : sets_) out.push_back(id);
  return out;
}

int ProcessSetTable::take_next_id() {
  std::lock_guard lock(mu_);
  return next_id_++;
}

std::optional<int> ProcessSetTable::id_of(const std::vector<int>& ranks) const {
  std::lock_guard lock(mu_);
  for (const auto& [id, set] : sets_) {
    if (set->ranks == ranks) return id;
  }
  return std::nullopt;
}

std::future<Result<int>> ProcessSetTable::submit_change(SetChange change) {
  std::lock_guard lock(mu_);
  auto future = change.done->get_future();
  changes_.push_back(std::move(change));
  return future;
}

bool ProcessSetTable::change_pending() const {
  std::lock_guard lock(mu_);
  return !changes_.empty();
}

std::optional<SetChange> ProcessSetTable::pop_change() {
  std::lock_guard lock(mu_);
  if (changes_.empty()) return std::nullopt;
  SetChange c = std::move(changes_.front());
  changes_.pop_front();
  return c;
}

std::vector<SetChange> ProcessSetTable::take_all_changes() {
  std::lock_guard lock(mu_);
  std::vector<SetChange> out(std::make_move_iterator(changes_.begin()), std::make_move_iterator(changes_.end()));
  changes_.clear();
  return out;
}

void ProcessSetTable::clear() {
  std::lock_guard lock(mu_);
  sets_.clear();
}

}  // namespace korovod
