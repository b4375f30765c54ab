#include "supervisor.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>

#include "job_signals.h"
#include "os/process_group.h"
#include "process_output.h"
#include "rank_env.h"

namespace korovod::launcher {
namespace {

using Clock = std::chrono::steady_clock;

struct RankState {
  RankState(const RankLaunch& l, OutputSink& sink) : launch(l), output(l.rank, sink) {}
  const RankLaunch& launch;
  std::optional<os::ProcessGroup> group;  // once started
  ProcessOutput output;
  bool running() const { return group && group->running(); }
  bool output_open() const { return group && ProcessOutput::open(*group); }
};

std::string quoted_command(const std::vector<std::string>& argv) {
  std::string s;
  for (const std::string& a : argv) s += (s.empty() ? "" : " ") + shell_quote(a);
  return s;
}

class Job {
 public:
  Job(const std::vector<RankLaunch>& launches, OutputSink& sink, const SupervisorOptions& options,
      GroupWatcher* watcher)
      : sink_(sink), options_(options), watcher_(watcher) {
    for (const RankLaunch& l : launches) ranks_.push_back(std::make_unique<RankState>(l, sink));
  }

  int run() {
    Result<JobSignalFd> signals = JobSignalFd::open();
    if (!signals.is_ok()) {
      say(sink_, signals.status().message());
      return 1;
    }
    start_all();
    while (!finished()) {
      wait_for_events(*signals);
      handle_signals(*signals);
      reap();
      kill_overdue();
    }
    for (auto& r : ranks_) {
      if (r->group) r->output.close(*r->group);
    }
    if (stop_signal_) return 128 + *stop_signal_;
    return first_failure_code_.value_or(0);
  }

 private:
  void start_all() {
    for (auto& r : ranks_) {
      if (ending_) return;
      if (options_.verbose) {
        say(sink_, fmt::format("rank {} on {}: {}", r->launch.rank, r->launch.host, quoted_command(r->launch.process.argv)));
      }
      Result<os::Child> child = spawn_process(r->launch.process);
      if (!child.is_ok()) {
        say(sink_, fmt::format("rank {} on {}: {}", r->launch.rank, r->launch.host, child.status().message()));
        first_failure_code_ = 127;  // the shell's code for a command that cannot run
        end_job();
        return;
      }
      r->group.emplace(std::move(child).value());
      if (watcher_) watcher_->watch(r->group->pid());
    }
  }

  bool finished() {
    const bool any_running = std::any_of(ranks_.begin(), ranks_.end(), [](auto& r) { return r->running(); });
    if (any_running) return false;
    if (!drain_until_) drain_until_ = Clock::now() + options_.drain;
    const bool output_open = std::any_of(ranks_.begin(), ranks_.end(), [](auto& r) { return r->output_open(); });
    return !output_open || Clock::now() >= *drain_until_;
  }

  void wait_for_events(JobSignalFd& signals) {
    std::vector<WatchedOutput> watched;
    for (auto& r : ranks_) {
      if (r->group) watched.push_back({&*r->group, &r->output});
    }
    poll_outputs(signals.fd(), watched, poll_timeout_ms());
  }

  // Until the next deadline (a SIGKILL due, the end of draining); a rank ending wakes poll()
  // through SIGCHLD on the signalfd.
  int poll_timeout_ms() const {
    std::optional<Clock::time_point> next = drain_until_;
    for (const auto& r : ranks_) {
      const std::optional<Clock::time_point> kill_at = r->group ? r->group->kill_deadline() : std::nullopt;
      if (kill_at && (!next || *kill_at < *next)) next = kill_at;
    }
    if (!next) return -1;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(*next - Clock::now()).count();
    return static_cast<int>(std::clamp<int64_t>(left, 0, 60'000));
  }

  void handle_signals(JobSignalFd& signals) {
    while (std::optional<int> sig = signals.next()) {
      if (*sig == SIGCHLD) continue;  // reap() looks at every rank after each wake-up anyway
      const char* abbrev = sigabbrev_np(*sig);
      const std::string name = abbrev ? fmt::format("SIG{}", abbrev) : fmt::format("signal {}", *sig);
      if (!ending_) {
        stop_signal_ = *sig;  // the exit code; a rank that failed before keeps its own
        say(sink_, fmt::format("got {}: ending every rank", name));
        end_job();
      } else {
        say(sink_, fmt::format("got {} while ending the job: killing every rank now", name));
        for (auto& r : ranks_) {
          if (r->group) r->group->kill_soon(Clock::now());
        }
      }
    }
  }

  void reap() {
    for (auto& r : ranks_) {
      if (!r->running()) continue;
      // Whatever the rank left running in its group goes with it.
      if (!r->group->poll()) continue;
      if (watcher_) watcher_->forget(r->group->pid());
      on_rank_exit(*r);
    }
  }

  void on_rank_exit(const RankState& r) {
    const int code = *r.group->exit_code();
    if (options_.verbose) say(sink_, fmt::format("rank {} on {} exited with code {}", r.launch.rank, r.launch.host, code));
    if (code == 0 || first_failure_code_ || stop_signal_) return;
    first_failure_code_ = code;
    say(sink_, fmt::format("rank {} on {} exited with code {}: ending the other ranks", r.launch.rank, r.launch.host, code));
    end_job();
  }

  void end_job() {
    if (ending_) return;
    ending_ = true;
    const auto now = Clock::now();
    for (auto& r : ranks_) {
      if (!r->running()) continue;
      if (r->launch.remote) {  // end of file for the remote watcher
        r->group->end(now, options_.grace + SupervisorOptions::kRemoteMargin, os::ProcessGroup::Ask::kCloseStdin);
      } else {
        r->group->end(now, options_.grace);
      }
    }
  }

  void kill_overdue() {
    const auto now = Clock::now();
    for (auto& r : ranks_) {
      if (r->group) r->group->kill_if_due(now);
    }
  }

  OutputSink& sink_;
  const SupervisorOptions& options_;
  GroupWatcher* watcher_;
  std::vector<std::unique_ptr<RankState>> ranks_;
  bool ending_ = false;
  std::optional<int> stop_signal_;
  std::optional<int> first_failure_code_;
  std::optional<Clock::time_point> drain_until_;
};

}  // namespace

int supervise(const std::vector<RankLaunch>& ranks, OutputSink& sink, const SupervisorOptions& options,
              GroupWatcher* watcher) {
  return Job(ranks, sink, options, watcher).run();
}

}  // namespace korovod::launcher
