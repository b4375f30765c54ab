// What the verbs read of a job's pods (commands.cc, follow.cc).
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>

#include "kube/client.h"
#include "kube/rest_client.h"

namespace cli {

// "training.kubeflow.org/job-name=NAME[,training.kubeflow.org/job-role=ROLE]".
std::string job_selector(const std::string& name, const std::string& role);
// The newest launcher pod of the job, if any.
std::optional<kube::Object> launcher_pod(kube::Client& api, const std::string& ns, const std::string& name);
// Every line of a followed log to `line`, until the log ends or `interrupted` (checked every
// 200 ms); whether it was interrupted.
bool drain_lines(kube::LineStream& stream, const std::atomic<bool>& interrupted,
                 const std::function<void(const std::string&)>& line);
// The pod's first container's name (the launcher's).
std::string container_of(const kube::Object& pod);

}  // namespace cli
