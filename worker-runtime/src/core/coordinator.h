// The coordinator's message table (rank 0 of a process set): counts requests per tensor name,
// emits a Response once every non-joined rank sent one, holds grouped tensors until the whole
// group is ready, tracks joins, and hands stalled tensors to the stall inspector.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/message.h"
#include "core/stall_inspector.h"
#include "core/timeline.h"

namespace korovod {

class Coordinator {
 public:
  Coordinator(std::vector<int> global_ranks, StallOptions stall, const Clock& clock,
              const Logger& log, Timeline* timeline);

  void add_requests(int set_rank, const std::vector<Request>& requests);
  // Ready responses in first-seen order, stall errors, and the JOIN response once all joined.
  std::vector<Response> take_ready();
  int joined_count() const;
  // Pending tensors whose stall deadlines need a look: forces a slow-path cycle even when no rank
  // has new requests, so stalls are reported and failed on time.
  bool stall_check_due() const;

 private:
  struct Pending {
    std::vector<std::optional<Request>> by_rank;
    Clock::TimePoint first_seen;
  };
  // Group members are held until every member of the group is settled: ready (then all of the
  // group's responses go out together) or failed by the stall inspector.
  struct HeldGroup {
    std::vector<Response> ready;
    int32_t settled = 0;
  };
  static const Request& first_request(const Pending& p);
  bool ready(const Pending& p) const;
  void settle(int32_t group, int32_t group_size, std::optional<Response> resp, std::vector<Response>& out);
  void add_join(int set_rank);
  void release_ready(std::vector<Response>& out);
  void fail_stalled(std::vector<Response>& out);

  std::vector<int> global_ranks_;
  const Clock& clock_;
  Timeline* timeline_;  // may be null
  StallInspector stall_;
  double stall_check_interval_s_;
  Clock::TimePoint last_stall_check_;
  std::unordered_map<std::string, Pending> table_;
  std::vector<std::string> order_;                       // names, first-seen order
  std::map<int32_t, HeldGroup> held_groups_;             // by group id
  std::vector<bool> joined_;
  int last_joined_ = -1;
};

}  // namespace korovod
