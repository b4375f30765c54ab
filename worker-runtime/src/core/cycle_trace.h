// Where the cycle in progress is, for the watchdog's error when a cycle is stuck: the process
// set and its cycle number, then the negotiation step or the response being run. Each rank's
// error names its own place; every cycle of a set is a collective of its members, so the ranks'
// cycle numbers agree while they are in step, and their errors side by side show which rank
// waits in which collective (docs/troubleshooting.md, "A collective did not complete").
// Written by whichever thread runs the cycle, read by the watchdog's thread.
#pragma once

#include <cstdint>
#include <string>

#include "core/message.h"
#include "core/mutex.h"
#include "core/thread_annotations.h"

namespace korovod {

class CycleTrace {
 public:
  // A set's negotiation starts: its `cycle`-th cycle (counted from 1 by the set).
  void begin_set(int set_id, int64_t cycle);
  // A negotiation step (a string literal: kept as a pointer).
  void step(const char* what);
  // A response about to run (shared, not copied: the cache or the planner holds it anyway).
  void response(ResponsePtr r);
  // Outside any cycle.
  void end_cycle();
  // "cycle 812 of process set 0, running ALLREDUCE of 'grad/a' and 5 more tensors (float32, 300
  // elements)" or "cycle 812 of process set 0, negotiating: gathering the requests at the
  // coordinator"; "" outside a cycle.
  std::string describe() const;

 private:
  mutable Mutex mu_;
  int set_ KOROVOD_GUARDED_BY(mu_) = -1;
  int64_t cycle_ KOROVOD_GUARDED_BY(mu_) = 0;
  const char* step_ KOROVOD_GUARDED_BY(mu_) = nullptr;
  ResponsePtr response_ KOROVOD_GUARDED_BY(mu_);
};

}  // namespace korovod
