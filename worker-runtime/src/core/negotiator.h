// One negotiation cycle of one process set (Horovod's ComputeResponseList): classify new
// requests against the response cache, one AND-allreduce of a bit vector (cache hits + status
// bits), and only when some rank has uncached/invalid requests or has joined, the slow path:
// gather requests to the coordinator, which builds Responses and broadcasts them.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/coordinator.h"
#include "core/cycle_trace.h"
#include "core/response_cache.h"
#include "korovod/transport.h"

namespace korovod {

struct CycleInput {
  std::vector<Request> requests;    // popped from the tensor queue this cycle
  bool shutdown = false;            // this rank wants to stop
  bool set_change_pending = false;  // this rank has a process-set add/remove waiting
  std::string param_update;         // set rank 0: tuned parameters to broadcast ("" = none)
};

struct CycleOutput {
  // Single-tensor, identical order on every rank: the cached tensors every rank submitted (in
  // cache-bit order; shared with the cache, not copied), then the coordinator's responses.
  std::vector<ResponsePtr> responses;
  bool shutdown = false;            // some rank asked to stop: every rank leaves the loop
  bool apply_set_change = false;    // every rank has a set change pending: apply one now
  bool any_joined = false;          // some rank waits in join(): it submits no set change
  bool used_slow_path = false;
  std::string param_update;         // set rank 0's update, identical on every member ("" = none)
};

struct NegotiatorOptions {
  std::vector<int> global_ranks;  // set rank -> global rank
  int cache_capacity = 1024;
  StallOptions stall;
  CycleTrace* trace = nullptr;  // the engine's: where a stuck cycle stopped (null: not traced)
};

class Negotiator {
 public:
  Negotiator(ControlChannel& channel, NegotiatorOptions options, const Clock& clock,
             const Logger& log, Timeline* timeline);
  Result<CycleOutput> run_cycle(CycleInput input);
  const ResponseCache& cache() const { return cache_; }

 private:
  struct PendingHit {
    Request request;
    Clock::TimePoint first_seen;
  };
  static bool grouped(const Request& req);
  void classify(std::vector<Request>& requests);
  void add_pending_hit(int bit, Request request, Clock::TimePoint now);
  void uncache_stalled_hits();
  template <typename Fn>
  void for_each_pending_bit(Fn fn) const;  // ascending bit order
  void to_coordinator(Request req);  // into uncached_, remembering the signature
  std::vector<uint64_t> status_and_hit_bits(const CycleInput& input) const;
  Status erase_invalid_everywhere(std::vector<uint64_t>& common);
  void take_common_hits(const std::vector<uint64_t>& common, std::vector<ResponsePtr>& out);
  void hits_to_coordinator();
  Result<ResponseList> exchange_with_coordinator(bool shutdown);
  void cache_new_responses(const ResponseList& list);

  ControlChannel& channel_;
  CycleTrace* trace_;
  void step(const char* what) {
    if (trace_) trace_->step(what);
  }
  const Clock& clock_;
  std::vector<int> global_ranks_;
  ResponseCache cache_;
  StallInspector stall_;
  std::optional<Coordinator> coordinator_;            // set rank 0 only
  // Cached requests waiting for the other ranks, by cache bit: a bit set in pending_words_ marks
  // a valid hits_by_bit_ entry (no node allocation or map walk per tensor per cycle).
  std::vector<PendingHit> hits_by_bit_;
  std::vector<uint64_t> pending_words_;
  int pending_count_ = 0;
  std::vector<Request> uncached_;
  // classify()'s scratch, kept for its capacity: each request's cache lookup, and the groups
  // with a member the cache cannot serve.
  std::vector<ResponseCache::Lookup> lookups_;
  std::vector<int32_t> split_groups_;
  std::set<int> invalid_bits_;
  std::unordered_map<std::string, Request> local_requests_;  // sent to the coordinator, until responded
  bool joined_ = false;
};

}  // namespace korovod
