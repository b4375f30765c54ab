// Training progress in MPIJob.status.progress (docs/progress.md): rank 0 of the training
// prints `korovod-progress {json}` lines (worker-runtime/python/korovod/common/progress.py), they
// reach the launcher pod's log through mpirun, and the operator (controller/progress_poller.h)
// turns the last one into the status. Pure: the line in, the status object out.
//
// What a job's pods can do with this path is bounded here: a line is read only from that job's
// own launcher log, only known fields of the right types are kept, numbers must be finite, and
// metrics are capped (kMaxMetrics names of at most kMaxMetricName characters), so a status stays
// small whatever the script prints.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "kube/client.h"

namespace mpijob {

inline constexpr std::string_view kProgressMarker = "korovod-progress ";
inline constexpr size_t kMaxMetrics = 16;
inline constexpr size_t kMaxMetricName = 63;

// The JSON object of the last well-formed progress line in `log` (a tail of the launcher's log;
// the marker may follow a prefix such as mpirun's --tag-output "[1,0]<stdout>:"); nullopt when
// there is none.
std::optional<kube::Object> last_progress_line(std::string_view log);

// status.progress from a progress line: step, totalSteps, stepsPerSecond, samplesPerSecond,
// loss, metrics, elapsedSeconds, lastStepTime, etaSeconds, eta ("2m10s"), source, and where the
// line was read: launcherPod and launcherRestarts (its container's restartCount then). Numbers keep
// six significant digits. Fields of
// the wrong type are dropped; a line without a step gives nullopt.
std::optional<kube::Object> progress_status(const kube::Object& line, const std::string& launcher_pod,
                                            int64_t launcher_restarts = 0);

// "2m10s", "1h0m5s", "45s"; "0s" for anything below one second.
std::string format_eta(double seconds);

// One line for people: "step 120/540 (22%), 3020 samples/s, loss 0.2310, ETA 2m10s". Parts that
// are unknown are left out; "" when the progress has no step.
std::string progress_summary(const kube::Object& progress);

}  // namespace mpijob
