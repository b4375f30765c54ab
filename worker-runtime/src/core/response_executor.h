// What the engine needs of the executor: run one agreed (possibly fused) response on this rank
// and complete its handles. The engine holds only this interface; the executor itself
// (algorithms/executor.h) dispatches to the collectives, which sit above core, so core's objects
// reference no symbol of algorithms/ (worker-runtime/README.md, "Layering"; checked by the
// static.layer_symbols test). Whoever builds the RuntimeOptions supplies the factory
// (RuntimeOptions::make_executor): the assembly layer for tcp_runtime / mpi_runtime, the tests for
// the runtimes they build by hand.
#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include "core/fusion.h"
#include "core/handle_table.h"
#include "core/logger.h"
#include "core/message.h"
#include "core/process_set.h"
#include "core/timeline.h"
#include "korovod/env.h"
#include "korovod/status.h"
#include "korovod/transport.h"

namespace korovod {

class ResponseExecutor {
 public:
  virtual ~ResponseExecutor() = default;
  // Runs `response` and completes its operations' handles. Returns an error only when the data
  // plane itself failed (the engine then stops); per-operation failures go to the operations'
  // handles. give_up_at: when the thread running the cycle must be back (a caller's timed wait;
  // the background thread passes max()). If a ready event is still not ready then, returns
  // kInProgress with the response's operations kept: the next execute() -- of the same response,
  // by whichever thread resumes the cycle -- waits on from where this one stopped.
  virtual Status execute(ProcessSet& set, const Response& response,
                         std::chrono::steady_clock::time_point give_up_at) = 0;
  // Drops a response left waiting by execute() (the engine stops; its handles are failed).
  virtual void abandon() = 0;
};

// The parts of the engine an executor works with; they outlive it (the engine owns both).
struct ExecutorParts {
  Env& env;                    // the ready-event bound's time and the poll's sleeps
  FusionBufferManager& fusion;
  Timeline& timeline;
  HandleTable& handles;
  const Logger& log;
  // How long a tensor's ReadyEvent may keep the collective waiting (0 = no bound).
  double ready_timeout_seconds = 0;
  const WorldInfo& world;      // where this rank runs
};

}  // namespace korovod
