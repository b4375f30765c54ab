// PerformOperation: runs one (fused) response on this rank with the first enabled backend and
// completes the handles. Returns an error only when the data plane itself failed (the engine
// then stops); per-operation failures go to the operations' handles.
#pragma once

#include <vector>

#include "algorithms/algorithm.h"
#include "core/logger.h"
#include "core/process_set.h"

namespace korovod {

class Executor {
 public:
  // ready_timeout_seconds: how long a tensor's ReadyEvent may keep the collective waiting (0 =
  // no bound; the runtime passes half of KOROVOD_COLLECTIVE_TIMEOUT_SECONDS).
  Executor(FusionBufferManager& fusion, Timeline& timeline, HandleTable& handles, const Logger& log,
           double ready_timeout_seconds = 0)
      : fusion_(fusion), timeline_(timeline), handles_(handles), log_(log), ready_timeout_s_(ready_timeout_seconds) {}

  Status execute(ProcessSet& set, const Response& response);

 private:
  // Into entries_ (reused: a fused response's entries are a large block that, freed every
  // cycle, made the allocator consolidate and trim the heap every cycle).
  void take_entries(ProcessSet& set, const Response& response);
  Status execute_entries(ProcessSet& set, const Response& response, std::vector<OpEntry>& entries);
  void complete_all(std::vector<OpEntry>& entries, const Status& status);
  Status run_collective(ProcessSet& set, const Response& response, std::vector<OpEntry>& entries);
  Status wait_until_ready(const std::vector<OpEntry>& entries) const;

  FusionBufferManager& fusion_;
  Timeline& timeline_;
  HandleTable& handles_;
  const Logger& log_;
  double ready_timeout_s_;
  // Per-response scratch, reused across cycles (execute() is never re-entered: callbacks that
  // wait do not run cycles on the thread that is inside one).
  std::vector<OpEntry> entries_;
  std::vector<Handle> done_handles_;
  std::vector<OpOutput> done_outputs_;
};

}  // namespace korovod
