// One negotiation cycle of one process set (Horovod's ComputeResponseList): classify new
// requests against the response cache, one AND-allreduce of a bit vector (cache hits + status
// bits), and only when some rank has uncached/invalid requests or has joined, the slow path:
// gather requests to the coordinator, which builds Responses and broadcasts them.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/coordinator.h"
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
  std::vector<Response> responses;  // single-tensor, identical order on every rank
  bool shutdown = false;            // some rank asked to stop: every rank leaves the loop
  bool apply_set_change = false;    // every rank has a set change pending: apply one now
  bool used_slow_path = false;
  std::string param_update;         // set rank 0's update, identical on every member ("" = none)
};

struct NegotiatorOptions {
  std::vector<int> global_ranks;  // set rank -> global rank
  int cache_capacity = 1024;
  StallOptions stall;
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
  void classify(std::vector<Request>& requests);
  void to_coordinator(Request req);  // into uncached_, remembering the signature
  std::vector<uint64_t> status_and_hit_bits(const CycleInput& input) const;
  Status erase_invalid_everywhere(std::vector<uint64_t>& common);
  std::vector<Response> take_common_hits(const std::vector<uint64_t>& common);
  Result<ResponseList> exchange_with_coordinator(bool shutdown);
  void cache_new_responses(const ResponseList& list);

  ControlChannel& channel_;
  const Clock& clock_;
  std::vector<int> global_ranks_;
  ResponseCache cache_;
  StallInspector stall_;
  std::optional<Coordinator> coordinator_;            // set rank 0 only
  std::map<int, PendingHit> pending_hits_;            // cache bit -> waiting request
  std::vector<Request> uncached_;
  std::set<int> invalid_bits_;
  std::unordered_map<std::string, Request> local_requests_;  // sent to the coordinator, until responded
  bool joined_ = false;
};

}  // namespace korovod
