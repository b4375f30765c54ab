// The processes of an elastic job (elastic_launch.h): started and stopped one by one while the
// job runs, unlike supervise()'s fixed set. Each runs in a process group of its own; its output
// is forwarded line by line prefixed with the worker's id (`[host:slot]<stdout>:`); stopping
// one = SIGTERM to its group (an ssh worker: closing its stdin, remote_command.h), SIGKILL after
// the grace period. Single-threaded: wait() polls the job's signalfd and every output pipe.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include "child_process.h"
#include "launch/elastic_round.h"
#include "job_signals.h"
#include "line_prefixer.h"
#include "orphan_guard.h"
#include "os/process_group.h"
#include "process_output.h"
#include "supervisor.h"

namespace korovod::launcher {

class WorkerPool {
 public:
  using Clock = std::chrono::steady_clock;
  WorkerPool(OutputSink& sink, const SupervisorOptions& options, GroupWatcher* watcher)
      : sink_(sink), options_(options), watcher_(watcher) {}
  ~WorkerPool();  // SIGKILLs what still runs

  Status start(const WorkerSlot& worker, const ProcessSpec& spec, bool remote);
  void stop(const WorkerSlot& worker);  // no-op when it is not running
  void stop_all();
  void kill_all();  // SIGKILL now
  bool any_running() const;
  // Output still open (something a worker left behind may hold it), read until `drain` after
  // the last worker ended.
  bool idle();

  struct Exit {
    WorkerSlot worker;
    int exit_code = 0;
  };
  struct Events {
    std::vector<Exit> exits;
    std::vector<int> signals;  // job signals other than SIGCHLD
  };
  // Forwards output and reaps until something happened or `timeout` passed.
  Events wait(JobSignalFd& signals, std::chrono::milliseconds timeout);

 private:
  struct Process {
    Process(const WorkerSlot& w, bool r, OutputSink& sink) : worker(w), remote(r), output(w.id(), sink) {}
    WorkerSlot worker;
    bool remote;
    std::optional<os::ProcessGroup> group;  // set at once by start()
    ProcessOutput output;
    bool running() const { return group->running(); }
    bool output_open() const { return ProcessOutput::open(*group); }
  };
  void reap(Events& events);
  void kill_overdue();
  int poll_timeout_ms(std::chrono::milliseconds cap) const;

  OutputSink& sink_;
  const SupervisorOptions& options_;
  GroupWatcher* watcher_;
  std::vector<std::unique_ptr<Process>> processes_;
  std::optional<Clock::time_point> drain_until_;
};

}  // namespace korovod::launcher
