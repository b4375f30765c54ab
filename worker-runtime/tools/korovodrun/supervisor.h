// Runs the ranks of one job to the end: starts them, forwards their output line by line with
// the rank prefix, and ends the whole job when one rank fails or korovodrun is told to stop
// (SIGINT, SIGTERM, SIGHUP). Ending = SIGTERM to each local rank's process group, or closing
// an ssh rank's stdin (its remote wrapper then ends it, remote_command.h); SIGKILL to what is
// left after the grace period. One thread: poll() over a signalfd and the ranks' pipes.
//
// The job signals must be blocked in every thread of the process (JobSignalBlock) while run()
// runs.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "child_process.h"
#include "line_prefixer.h"
#include "orphan_guard.h"

namespace korovod::launcher {

struct RankLaunch {
  int rank = 0;
  std::string host;
  ProcessSpec process;
  bool remote = false;  // an ssh rank: ended through its stdin (process.stdin_pipe must be set)
};

struct SupervisorOptions {
  // horovodrun's GRACEFUL_TERMINATION_TIME_S. An ssh rank gets kRemoteMargin more: its remote
  // wrapper kills the rank after `grace`, then ssh brings its exit code back.
  std::chrono::milliseconds grace{5000};
  static constexpr std::chrono::milliseconds kRemoteMargin{2000};
  // After the last rank ended, how long output still held open by something it left behind is
  // read before korovodrun stops reading.
  std::chrono::milliseconds drain{1000};
  bool verbose = false;  // print each rank's command and every exit
};

// korovodrun's exit code: the exit code of the first rank that failed (128 + signal for a
// killed rank), or 128 + the signal that stopped the job, whichever came first; else 0. A signal
// while the job is already ending SIGKILLs every rank at once. `watcher` (when given) hears
// of every rank's process group as it starts and after it is gone.
int supervise(const std::vector<RankLaunch>& ranks, OutputSink& sink, const SupervisorOptions& options,
              GroupWatcher* watcher = nullptr);

}  // namespace korovod::launcher
