// Process sets (Horovod's ProcessSet / ProcessSetTable): each has its own control channel,
// backends, tensor queue, response cache and coordinator. Id 0 is the global set. Dynamic
// add/remove requests wait in the table until every rank has one pending (agreed through a
// status bit of the global set's negotiation), then all ranks apply them in the same cycle.
#pragma once

#include <atomic>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "core/mutex.h"
#include "core/negotiator.h"
#include "core/tensor_queue.h"
#include "core/thread_annotations.h"

namespace korovod {

struct ProcessSet {
  int id = 0;
  std::vector<int> ranks;  // global ranks, sorted
  int set_rank = -1;       // -1: this rank is not a member
  std::unique_ptr<ControlChannel> control;
  // The control channel runs on the shared-memory data plane (process_set.cc): every wait in a
  // cycle of this set notices a dead or stuck peer by itself.
  bool control_on_data_plane = false;
  std::vector<std::unique_ptr<Backend>> backends;
  Backend* host_plane = nullptr;  // backend_for(kCpuDevice), found once at creation
  std::unique_ptr<Negotiator> negotiator;
  TensorQueue queue;
  std::atomic<int32_t> next_group_id{0};
  std::atomic<int64_t> unnamed_ops{0};  // names the set's unnamed ops (engine_enqueue.cc)
  int64_t cycles = 0;  // negotiations run (Engine::run_cycle, under its cycle lock): equal on every member

  bool member() const { return set_rank >= 0; }
  Backend* backend_for(int device) const;  // first enabled wins
  int set_rank_of(int global_rank) const;  // -1 if not in the set
  // The watchdog's hook (any thread): Backend::interrupt_wait on the control channel and every
  // backend; true when one of them was waiting and will fail naming the peers it waited for.
  bool interrupt_waits(const std::string& why) const;
  // The watchdog's probe (ControlChannel::silent_peers) on this set's control channel.
  std::string silent_peers(double window_seconds) const { return control ? control->silent_peers(window_seconds) : ""; }
};

struct ProcessSetDeps {
  TransportProvider& transport;
  const std::vector<std::shared_ptr<BackendProvider>>& backends;
  NegotiatorOptions negotiation;  // global_ranks is filled per set
  const Clock& clock;
  const Logger& log;
  Timeline* timeline;  // non-null on the global rank 0
};

// Collective among the members of `ranks`; non-members get an empty shell that knows its ranks.
Result<std::shared_ptr<ProcessSet>> create_process_set(int id, std::vector<int> ranks, int my_rank,
                                                       const ProcessSetDeps& deps);

struct SetChange {
  bool add = true;
  std::vector<int> ranks;  // add
  int id = -1;             // remove
  std::shared_ptr<std::promise<Result<int>>> done = std::make_shared<std::promise<Result<int>>>();
};

class ProcessSetTable {
 public:
  void insert(std::shared_ptr<ProcessSet> set);
  std::shared_ptr<ProcessSet> get(int id) const;
  std::shared_ptr<ProcessSet> erase(int id);
  std::vector<std::shared_ptr<ProcessSet>> members_in_id_order() const;
  std::vector<std::shared_ptr<ProcessSet>> all() const;
  std::vector<int> ids() const;
  int take_next_id();
  // The set with exactly these ranks (sorted), the global set included: as in Horovod, whose
  // global set holds every rank once initialized, adding a set of every rank is a duplicate.
  std::optional<int> set_with(const std::vector<int>& ranks) const;

  std::future<Result<int>> submit_change(SetChange change);
  bool change_pending() const;
  std::optional<SetChange> pop_change();
  std::vector<SetChange> take_all_changes();
  void clear();

 private:
  mutable Mutex mu_;
  std::map<int, std::shared_ptr<ProcessSet>> sets_ KOROVOD_GUARDED_BY(mu_);
  int next_id_ KOROVOD_GUARDED_BY(mu_) = 0;
  std::deque<SetChange> changes_ KOROVOD_GUARDED_BY(mu_);
};

}  // namespace korovod
