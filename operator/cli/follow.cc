// `submit --follow`: the launcher's log as it is written, the job's state as it changes, and the
// job's result as the exit code.
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "cli/cluster_reads.h"
#include "cli/commands.h"
#include "cli/job_view.h"
#include "kube/api_error.h"
#include "kube/clock_sleep.h"
#include "mpijob/progress.h"
#include "mpijob/types.h"

namespace cli {
namespace {

using kube::Object;

// A launcher pod whose container has started (its log can be read): "<pod>#<restarts>", which
// changes when the operator replaces the pod or its container restarts; "" otherwise.
std::string started_launcher(const Object& pod) {
  const std::string phase = pod.value("/status/phase"_json_pointer, std::string());
  if (phase != "Running" && phase != "Succeeded" && phase != "Failed") return "";
  return pod["metadata"].value("name", "") + "#" +
         std::to_string(pod.value("/status/containerStatuses/0/restartCount"_json_pointer, 0));
}

// Prints the log's lines until it ends or the user interrupts; true when interrupted. Rank 0's
// progress lines (docs/progress.md) are shown as the progress line `korovod run` prints.
bool stream_log(PodLogs& logs, const std::string& ns, const Object& pod, const std::atomic<bool>& interrupted, Io io) {
  const std::string pod_name = pod["metadata"].value("name", "");
  std::unique_ptr<kube::LineStream> stream = logs.follow(ns, pod_name, container_of(pod));
  const bool stopped = drain_lines(*stream, interrupted, [&](const std::string& line) {
    if (line.find(mpijob::kProgressMarker) != std::string::npos) {
      if (auto parsed = mpijob::last_progress_line(line)) {
        if (auto progress = mpijob::progress_status(*parsed, pod_name)) {
          io.out << "korovod: progress: " << mpijob::progress_summary(*progress) << "\n";
          return;
        }
      }
    }
    io.out << line << "\n";
  });
  io.out.flush();
  return stopped;
}

std::string last_message(const Object& job) {
  const Object::json_pointer p("/status/conditions");
  if (!job.contains(p) || job.at(p).empty()) return "";
  const Object& c = job.at(p).back();
  return c.value("reason", "") + ": " + c.value("message", "");
}

// The lifecycle states the job has passed on its way to `state` that were never shown: Created,
// then Running, when their conditions are in the job's list (a condition stays there when it
// turns False). A job that starts within one poll is thus still said to have been Created.
std::vector<std::string> missed_states(const Object& job, const std::string& state,
                                       const std::set<std::string>& announced) {
  std::vector<std::string> missed;
  const Object::json_pointer p("/status/conditions");
  if (!job.contains(p) || !job.at(p).is_array()) return missed;
  for (const char* step : {"Created", "Running"}) {
    if (step == state || announced.count(step)) continue;
    for (const Object& c : job.at(p)) {
      if (c.value("type", "") == step) {
        missed.emplace_back(step);
        break;
      }
    }
  }
  return missed;
}

}  // namespace

int follow_job(kube::Client& api, PodLogs& logs, kube::Clock& clock, const std::string& ns, const std::string& name,
               const FollowOptions& options, const std::atomic<bool>& interrupted, Io io) {
  std::string shown_state = "-", followed;
  std::set<std::string> announced;  // every state said so far
  const auto since = clock.steady_now();
  while (!interrupted) {
    Object job;
    try {
      job = api.get(mpijob::kMPIJobs, ns, name);
    } catch (const kube::ApiError& e) {
      if (!kube::is_not_found(e)) throw;
      io.err << "korovod: mpijob " << name << " was deleted\n";
      return 1;
    }
    const std::string state = job_state(job);
    if (state != shown_state) {
      for (const std::string& missed : missed_states(job, state, announced)) {
        io.err << "korovod: mpijob " << name << ": " << missed << "\n";
        announced.insert(missed);
      }
      io.err << "korovod: mpijob " << name << ": " << (state.empty() ? "waiting for the operator" : state) << "\n";
      shown_state = state;
      announced.insert(state);
    }
    if (state == "Succeeded") return 0;
    if (state == "Failed") {
      io.err << "korovod: mpijob " << name << " failed: " << last_message(job) << "\n";
      return 1;
    }
    const std::optional<Object> pod = launcher_pod(api, ns, name);
    const std::string started = pod ? started_launcher(*pod) : "";
    if (!started.empty() && started != followed) {
      followed = started;
      if (stream_log(logs, ns, *pod, interrupted, io)) break;
      continue;  // the log ended: read the job's state again at once
    }
    if (followed.empty() && clock.steady_now() - since > options.launcher_wait) {
      io.err << "korovod: no launcher of mpijob " << name << " started within "
             << human_duration(options.launcher_wait) << " (kubectl korovod get " << name << " -n " << ns
             << " shows why); it is left as it is\n";
      return 1;
    }
    kube::sleep_for(clock, options.poll);
  }
  io.err << "korovod: stopped following; mpijob " << name << " keeps running. Delete it with: kubectl korovod delete "
         << name << " -n " << ns << "\n";
  return 130;
}

}  // namespace cli
