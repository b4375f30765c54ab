// The engine's executor (core/response_executor.h): runs one (fused) response on this rank with
// the first enabled backend, through the collectives of this folder (algorithms/algorithm.h), and
// completes the handles. It lives here, above the collectives it dispatches to, and the engine
// gets it from RuntimeOptions::make_executor (make_executor below), so that core's objects need
// nothing of algorithms/ (worker-runtime/README.md, "Layering").
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/op_entry.h"
#include "core/fusion.h"
#include "core/handle_table.h"
#include "core/logger.h"
#include "core/message.h"
#include "core/process_set.h"
#include "core/response_executor.h"
#include "core/timeline.h"
#include "korovod/env.h"

namespace korovod {

class Executor final : public ResponseExecutor {
 public:
  // ready_timeout_seconds: how long a tensor's ReadyEvent may keep the collective waiting (0 =
  // no bound; the runtime passes half of KOROVOD_COLLECTIVE_TIMEOUT_SECONDS).
  // `env`: the time the ready-event bound is measured on and the poll sleeps in. `world`: where
  // this rank runs (the algorithms' SetLayout of the global set).
  Executor(Env& env, FusionBufferManager& fusion, Timeline& timeline, HandleTable& handles, const Logger& log,
           double ready_timeout_seconds = 0, const WorldInfo& world = {})
      : env_(env), fusion_(fusion), timeline_(timeline), handles_(handles), log_(log),
        ready_timeout_s_(ready_timeout_seconds), layout_(layout_of(world)) {}

  // ResponseExecutor (core/response_executor.h says what each does).
  Status execute(ProcessSet& set, const Response& response,
                 std::chrono::steady_clock::time_point give_up_at) override;
  void abandon() override;

 private:
  // Into entries_ (reused: a fused response's entries are a large block that, freed every
  // cycle, made the allocator consolidate and trim the heap every cycle).
  void take_entries(ProcessSet& set, const Response& response);
  Status execute_entries(ProcessSet& set, const Response& response, std::vector<OpEntry>& entries,
                         std::chrono::steady_clock::time_point give_up_at);
  void complete_all(std::vector<OpEntry>& entries, const Status& status);
  Status run_collective(ProcessSet& set, const Response& response, std::vector<OpEntry>& entries,
                        std::chrono::steady_clock::time_point give_up_at);
  static SetLayout layout_of(const WorldInfo& w) {
    SetLayout l;
    l.local_size = w.local_size > 0 ? w.local_size : 1;
    l.homogeneous = w.homogeneous;
    l.contiguous = w.rank == w.cross_rank * w.local_size + w.local_rank;
    return l;
  }
  Status wait_until_ready(const std::vector<OpEntry>& entries, std::chrono::steady_clock::time_point give_up_at);

  Env& env_;
  FusionBufferManager& fusion_;
  Timeline& timeline_;
  HandleTable& handles_;
  const Logger& log_;
  double ready_timeout_s_;
  SetLayout layout_;  // this rank's place on the hosts (`global` set per response)
  // Per-response scratch, reused across cycles (execute() is never re-entered: callbacks that
  // wait do not run cycles on the thread that is inside one).
  std::vector<OpEntry> entries_;
  // execute() gave up on a ready event: entries_ still hold that response's operations.
  bool waiting_for_ready_ = false;
  // The ready event's bound (ready_timeout_s_), from the first poll that found one not ready; it
  // runs on across a wait given up and resumed on another thread.
  std::optional<std::chrono::steady_clock::time_point> ready_deadline_;
  std::vector<Handle> done_handles_;
  std::vector<OpOutput> done_outputs_;
};

// RuntimeOptions::make_executor for every runtime: an Executor over the engine's parts.
std::unique_ptr<ResponseExecutor> make_executor(const ExecutorParts& parts);

}  // namespace korovod
