#include "transport/fake/fake_world.h"

#include <fmt/format.h>

#include <algorithm>

namespace korovod::fake {

FakeWorld::FakeWorld(int size, std::chrono::milliseconds timeout)
    : size_(size), timeout_(timeout), dead_(size, false) {}

void FakeWorld::kill(int global_rank) {
  MutexLock lock(mu_);
  dead_[global_rank] = true;
}

bool FakeWorld::dead(int global_rank) const {
  MutexLock lock(mu_);
  return dead_[global_rank];
}

Result<std::vector<std::string>> FakeWorld::exchange(const std::string& key, int members, int index,
                                                     int caller_global_rank, std::string bytes) {
  MutexLock lock(mu_);
  if (dead_[caller_global_rank]) return Status::aborted("fake transport: this rank is dead");
  Group& g = groups_[key];
  if (g.slots.empty()) g.slots.resize(members);
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  // Wait until the previous round was read by everyone before depositing into the next.
  if (!cv_.wait_until(lock, deadline, [&] { return g.readers_left == 0; })) {
    return Status::aborted(fmt::format("fake transport: timeout in group {}", key));
  }
  const uint64_t my_round = g.round;
  g.slots[index] = std::move(bytes);
  if (++g.arrived == members) {
    g.published = std::move(g.slots);
    g.slots.assign(members, {});
    g.arrived = 0;
    g.readers_left = members;
    ++g.round;
    cv_.notify_all();
  } else if (!cv_.wait_until(lock, deadline, [&] { return g.round != my_round; })) {
    return Status::aborted(fmt::format("fake transport: collective in group {} timed out", key));
  }
  std::vector<std::string> out = g.published;
  if (--g.readers_left == 0) cv_.notify_all();
  return out;
}

WorldInfo FakeTransportProvider::world() const {
  WorldInfo w;
  w.rank = rank_;
  w.size = world_->size();
  if (host_of_rank_.empty()) {
    w.local_rank = rank_;
    w.local_size = world_->size();
    w.cross_rank = 0;
    w.cross_size = 1;
    return w;
  }
  // As the real transports number them: local ranks in rank order within a host, hosts in the
  // order of their first rank.
  const int host = host_of_rank_[static_cast<size_t>(rank_)];
  std::vector<int> hosts_in_order, per_host;
  for (size_t r = 0; r < host_of_rank_.size(); ++r) {
    const int h = host_of_rank_[r];
    const auto at = std::find(hosts_in_order.begin(), hosts_in_order.end(), h);
    if (at == hosts_in_order.end()) {
      hosts_in_order.push_back(h);
      per_host.push_back(0);
    }
    const size_t index = static_cast<size_t>(std::find(hosts_in_order.begin(), hosts_in_order.end(), h) -
                                             hosts_in_order.begin());
    if (static_cast<int>(r) == rank_) w.local_rank = per_host[index];
    ++per_host[index];
  }
  const size_t mine = static_cast<size_t>(std::find(hosts_in_order.begin(), hosts_in_order.end(), host) -
                                          hosts_in_order.begin());
  w.local_size = per_host[mine];
  w.cross_rank = static_cast<int>(mine);
  w.cross_size = static_cast<int>(hosts_in_order.size());
  w.homogeneous = std::all_of(per_host.begin(), per_host.end(), [&](int n) { return n == per_host[0]; });
  return w;
}

namespace {

int index_of(const std::vector<int>& ranks, int rank) {
  return static_cast<int>(std::find(ranks.begin(), ranks.end(), rank) - ranks.begin());
}

class FakeControl final : public ControlChannel {
 public:
  FakeControl(std::shared_ptr<FakeWorld> world, std::vector<int> ranks, int rank, std::string key)
      : world_(std::move(world)), ranks_(std::move(ranks)), index_(index_of(ranks_, rank)),
        key_(std::move(key)) {}
  int rank() const override { return index_; }
  int size() const override { return static_cast<int>(ranks_.size()); }

  Status allreduce_bits(std::vector<uint64_t>& bits, BitwiseOp op) override {
    std::string mine(reinterpret_cast<const char*>(bits.data()), bits.size() * 8);
    auto all = exchange(std::move(mine));
    if (!all.is_ok()) return all.status();
    for (const std::string& other : *all) {
      const auto* words = reinterpret_cast<const uint64_t*>(other.data());
      for (size_t i = 0; i < bits.size(); ++i) bits[i] = op == BitwiseOp::kAnd ? bits[i] & words[i] : bits[i] | words[i];
    }
    return Status::ok();
  }
  Result<std::vector<std::string>> gather_to_root(const std::string& mine) override {
    auto all = exchange(mine);
    if (!all.is_ok()) return all.status();
    if (index_ != 0) return std::vector<std::string>{};
    return std::move(all).value();
  }
  Status broadcast_from_root(std::string& bytes) override {
    auto all = exchange(index_ == 0 ? bytes : std::string());
    if (!all.is_ok()) return all.status();
    bytes = (*all)[0];
    return Status::ok();
  }
  // A stand-in for a probe that cannot interrupt its wait (as MPI's): the world knows the dead.
  std::string silent_peers(double window_seconds) override {
    std::string dead;
    for (int r : ranks_) {
      if (world_->dead(r)) dead += fmt::format("{}rank {}", dead.empty() ? "" : ", ", r);
    }
    return dead.empty() ? "" : fmt::format("lost {} (no answer within {} s)", dead, window_seconds);
  }

 private:
  Result<std::vector<std::string>> exchange(std::string bytes) {
    return world_->exchange(key_, size(), index_, ranks_[index_], std::move(bytes));
  }
  std::shared_ptr<FakeWorld> world_;
  std::vector<int> ranks_;
  int index_;
  std::string key_;
};

}  // namespace

std::unique_ptr<ControlChannel> make_fake_control(std::shared_ptr<FakeWorld> world,
                                                  const std::vector<int>& global_ranks, int rank,
                                                  const std::string& key) {
  return std::make_unique<FakeControl>(std::move(world), global_ranks, rank, key);
}

Result<std::unique_ptr<ControlChannel>> FakeTransportProvider::create_control(
    const std::vector<int>& global_ranks, int set_id) {
  return make_fake_control(world_, global_ranks, rank_, fmt::format("control/{}", set_id));
}

}  // namespace korovod::fake
