// In-memory transport for tests: N ranks as N threads of one process. Every collective is built
// on one primitive, exchange(): each member deposits bytes and receives everyone's. A rank can
// be marked dead; collectives it would join then fail after the timeout instead of hanging.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/mutex.h"
#include "korovod/transport.h"

namespace korovod::fake {

class FakeWorld {
 public:
  explicit FakeWorld(int size, std::chrono::milliseconds timeout = std::chrono::seconds(30));
  int size() const { return size_; }
  // Collective among `members` (sorted global ranks); `index` is the caller's position in it.
  // A dead caller fails at once without depositing, so its peers time out as on a real hang.
  Result<std::vector<std::string>> exchange(const std::string& group_key, int members, int index,
                                            int caller_global_rank, std::string bytes);
  void kill(int global_rank);  // later collectives including this rank time out
  bool dead(int global_rank) const;

 private:
  struct Group {
    std::vector<std::string> slots;
    std::vector<std::string> published;
    int arrived = 0;
    int readers_left = 0;
    uint64_t round = 0;
  };
  const int size_;
  const std::chrono::milliseconds timeout_;
  mutable Mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Group> groups_ KOROVOD_GUARDED_BY(mu_);
  std::vector<bool> dead_ KOROVOD_GUARDED_BY(mu_);
};

class FakeTransportProvider final : public TransportProvider {
 public:
  // host_of_rank: the host each global rank runs on (0, 1, ...), for world()'s local and cross
  // ranks; empty = every rank on host 0.
  FakeTransportProvider(std::shared_ptr<FakeWorld> world, int rank, std::vector<int> host_of_rank = {})
      : world_(std::move(world)), rank_(rank), host_of_rank_(std::move(host_of_rank)) {}
  std::string name() const override { return "FAKE"; }
  WorldInfo world() const override;
  Result<std::unique_ptr<ControlChannel>> create_control(const std::vector<int>& global_ranks,
                                                         int set_id) override;
  void abort_job(int) override {}

 private:
  std::shared_ptr<FakeWorld> world_;
  int rank_;
  std::vector<int> host_of_rank_;
};

class FakeBackendProvider final : public BackendProvider {
 public:
  FakeBackendProvider(std::shared_ptr<FakeWorld> world, int rank) : world_(std::move(world)), rank_(rank) {}
  std::string name() const override { return "FAKE"; }
  Result<std::unique_ptr<Backend>> create_backend(const std::vector<int>& global_ranks, int set_id) override;

 private:
  std::shared_ptr<FakeWorld> world_;
  int rank_;
};

// A control channel over `world` for the members `global_ranks` (used directly by tests).
std::unique_ptr<ControlChannel> make_fake_control(std::shared_ptr<FakeWorld> world,
                                                  const std::vector<int>& global_ranks, int rank,
                                                  const std::string& key);

}  // namespace korovod::fake
