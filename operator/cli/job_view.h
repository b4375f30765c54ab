// What `kubectl korovod get` and `top` print about MPIJobs (pure: objects in, text out).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "kube/client.h"

namespace cli {

using Clock = std::chrono::system_clock;

// The type of the job's last condition (the CRD's State column), "" before any.
std::string job_state(const kube::Object& mpijob);

// kubectl's short ages: "45s", "3m20s", "95m", "5h3m", "30h", "3d4h", "120d", "2y".
std::string human_duration(std::chrono::seconds d);

// The columns of `get` (the CRD's printer columns): NAME STATE WORKERS READY RESTARTS STEP
// SAMPLES/S LOSS ETA AGE, and NAMESPACE first when `with_namespace`. STATE is the last
// condition's type ("" before any); the progress columns are "-" while status.progress lacks them.
std::vector<std::string> job_columns(bool with_namespace);
std::vector<std::string> job_row(const kube::Object& mpijob, Clock::time_point now, bool with_namespace);

// The columns of `top`, for jobs not finished: NAMESPACE NAME STATE WORKERS READY RESTARTS STEP
// SAMPLES/S LOSS ETA RUNNING (since status.startTime, "-" before it).
std::vector<std::string> top_columns();
std::vector<std::string> top_row(const kube::Object& mpijob, Clock::time_point now);
// Neither Succeeded nor Failed.
bool job_running(const kube::Object& mpijob);

// Columns padded as kubectl pads them: three spaces between, headers as given.
std::string render_table(const std::vector<std::string>& columns, const std::vector<std::vector<std::string>>& rows);

// `get NAME`: state, workers, restarts, progress, times, every condition (type, reason, message), and
// each worker pod that failed: its name and why (the container's reason and exit code).
std::string describe_job(const kube::Object& mpijob, const std::vector<kube::Object>& pods, Clock::time_point now);

// An RFC 3339 time ("2026-12-06T20:00:00Z") as a time point; nullopt when absent or malformed.
std::optional<Clock::time_point> parse_time(const kube::Object& value);

}  // namespace cli
