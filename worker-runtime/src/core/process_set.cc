#include "core/process_set.h"

#include <algorithm>

namespace korovod {
namespace {

// A set's control channel moved onto the CPU data plane when that offers the negotiation's
// bit-vector allreduce (shared memory, when every member shares the host): a steady-state cycle
// then touches a few cache lines instead of running a control-plane collective, and the slow
// path's gather and broadcast run as shared-memory allgathers/broadcasts. Every wait of a cycle
// is then one that notices a dead or stuck peer (shm::Group::wait), which is what lets a waiting
// caller run cycles itself (CycleDriver::drive_cycles). The original channel stays for vectors
// too long for the control block.
class DataPlaneControl final : public ControlChannel {
 public:
  DataPlaneControl(std::unique_ptr<ControlChannel> inner, Backend& plane) : inner_(std::move(inner)), plane_(plane) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  // The vector's length is the same on every member, so all take the same branch.
  Status allreduce_bits(std::vector<uint64_t>& bits, BitwiseOp op) override {
    if (bits.size() <= plane_.bits_allreduce_words()) return plane_.allreduce_bits(bits, op);
    return inner_->allreduce_bits(bits, op);
  }
  Result<std::vector<std::string>> gather_to_root(const std::string& mine) override {
    const int n = size();
    std::vector<int64_t> sizes(static_cast<size_t>(n));
    const int64_t my_size = static_cast<int64_t>(mine.size());
    KOROVOD_RETURN_IF_ERROR(plane_.allgatherv(&my_size, sizeof my_size, sizes.data(),
                                              std::vector<int64_t>(static_cast<size_t>(n), sizeof my_size)));
    int64_t total = 0;
    for (int64_t s : sizes) total += s;
    std::string all(static_cast<size_t>(total), '\0');
    KOROVOD_RETURN_IF_ERROR(plane_.allgatherv(mine.data(), my_size, all.data(), sizes));
    std::vector<std::string> out;
    if (rank() != 0) return out;
    size_t at = 0;
    for (int64_t s : sizes) {
      out.push_back(all.substr(at, static_cast<size_t>(s)));
      at += static_cast<size_t>(s);
    }
    return out;
  }
  Status broadcast_from_root(std::string& bytes) override {
    int64_t n = rank() == 0 ? static_cast<int64_t>(bytes.size()) : 0;
    KOROVOD_RETURN_IF_ERROR(plane_.broadcast(&n, sizeof n, 0));
    bytes.resize(static_cast<size_t>(n));
    return n > 0 ? plane_.broadcast(bytes.data(), n, 0) : Status::ok();
  }
  // The plane itself is among the set's backends, which the watchdog interrupts too.
  bool interrupt_wait(const std::string& why) override { return inner_->interrupt_wait(why); }
  std::string silent_peers(double window_seconds) override { return inner_->silent_peers(window_seconds); }

 private:
  std::unique_ptr<ControlChannel> inner_;
  Backend& plane_;  // owned by the same ProcessSet, which outlives the negotiator using this
};

}  // namespace

Backend* ProcessSet::backend_for(int device) const {
  for (const auto& b : backends) {
    if (b->enabled(device)) return b.get();
  }
  return nullptr;
}

bool ProcessSet::interrupt_waits(const std::string& why) const {
  bool waiting = control && control->interrupt_wait(why);
  for (const auto& b : backends) waiting = b->interrupt_wait(why) || waiting;
  return waiting;
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
  // A device plane that stages through host memory runs on the set's own host plane.
  set->host_plane = set->backend_for(kCpuDevice);
  if (Backend* host = set->host_plane) {
    for (const auto& b : set->backends) {
      if (b.get() != host) b->attach_host_plane(*host);
    }
  }
  if (Backend* cpu = set->host_plane; cpu != nullptr && cpu->bits_allreduce_words() > 0) {
    set->control = std::make_unique<DataPlaneControl>(std::move(set->control), *cpu);
    set->control_on_data_plane = true;
  }
  NegotiatorOptions options = deps.negotiation;
  options.global_ranks = set->ranks;
  set->negotiator = std::make_unique<Negotiator>(*set->control, options, deps.clock, deps.log,
                                                 id == 0 ? deps.timeline : nullptr);
  return set;
}

void ProcessSetTable::insert(std::shared_ptr<ProcessSet> set) {
  MutexLock lock(mu_);
  sets_[set->id] = std::move(set);
}

std::shared_ptr<ProcessSet> ProcessSetTable::get(int id) const {
  MutexLock lock(mu_);
  auto it = sets_.find(id);
  return it == sets_.end() ? nullptr : it->second;
}

std::shared_ptr<ProcessSet> ProcessSetTable::erase(int id) {
  MutexLock lock(mu_);
  auto it = sets_.find(id);
  if (it == sets_.end()) return nullptr;
  auto set = std::move(it->second);
  sets_.erase(it);
  return set;
}

std::vector<std::shared_ptr<ProcessSet>> ProcessSetTable::members_in_id_order() const {
  MutexLock lock(mu_);
  std::vector<std::shared_ptr<ProcessSet>> out;
  for (const auto& [id, set] : sets_) {
    if (set->member()) out.push_back(set);
  }
  return out;
}

std::vector<std::shared_ptr<ProcessSet>> ProcessSetTable::all() const {
  MutexLock lock(mu_);
  std::vector<std::shared_ptr<ProcessSet>> out;
  for (const auto& [id, set] : sets_) out.push_back(set);
  return out;
}

std::vector<int> ProcessSetTable::ids() const {
  MutexLock lock(mu_);
  std::vector<int> out;
  for (const auto& [id, set] : sets_) out.push_back(id);
  return out;
}

int ProcessSetTable::take_next_id() {
  MutexLock lock(mu_);
  return next_id_++;
}

std::optional<int> ProcessSetTable::set_with(const std::vector<int>& ranks) const {
  MutexLock lock(mu_);
  for (const auto& [id, set] : sets_) {
    if (set->ranks == ranks) return id;
  }
  return std::nullopt;
}

std::future<Result<int>> ProcessSetTable::submit_change(SetChange change) {
  MutexLock lock(mu_);
  auto future = change.done->get_future();
  changes_.push_back(std::move(change));
  return future;
}

bool ProcessSetTable::change_pending() const {
  MutexLock lock(mu_);
  return !changes_.empty();
}

std::optional<SetChange> ProcessSetTable::pop_change() {
  MutexLock lock(mu_);
  if (changes_.empty()) return std::nullopt;
  SetChange c = std::move(changes_.front());
  changes_.pop_front();
  return c;
}

std::vector<SetChange> ProcessSetTable::take_all_changes() {
  MutexLock lock(mu_);
  std::vector<SetChange> out(std::make_move_iterator(changes_.begin()), std::make_move_iterator(changes_.end()));
  changes_.clear();
  return out;
}

void ProcessSetTable::clear() {
  MutexLock lock(mu_);
  sets_.clear();
}

}  // namespace korovod
