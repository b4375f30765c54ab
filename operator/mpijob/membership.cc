#include "mpijob/membership.h"

#include <algorithm>

#include "kube/object_meta.h"
#include "mpijob/builders.h"

namespace mpijob {
namespace {

bool mentions_discovery(const kube::Object& words) {
  if (!words.is_array()) return false;
  return std::any_of(words.begin(), words.end(), [](const kube::Object& w) {
    return w.is_string() && w.get<std::string>().find("--host-discovery-script") != std::string::npos;
  });
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

bool is_elastic(const MPIJob& job) {
  const std::string a = job.annotation(kAnnotationElastic);
  if (a == "true") return true;
  if (a == "false") return false;
  for (const auto& c : child(child(job.pod_template(ReplicaType::Launcher), "spec"), "containers")) {
    if (mentions_discovery(child(c, "command")) || mentions_discovery(child(c, "args"))) return true;
  }
  return false;
}

bool pod_trains(const kube::Object& pod) {
  if (kube::has_deletion_timestamp(pod)) return false;
  if (member<std::string>(child(pod, "status"), "phase").value_or("") != "Running") return false;
  for (const auto& c : child(child(pod, "status"), "conditions")) {
    if (member<std::string>(c, "type") == "Ready") return member<std::string>(c, "status") == "True";
  }
  return false;
}

std::vector<std::string> listed_workers(const MPIJob& job,
                                        const std::vector<kube::Object>& worker_pods) {
  const int32_t replicas = job.replicas(ReplicaType::Worker);
  std::vector<std::string> out;
  for (const auto& pod : worker_pods) {
    const std::string name = kube::name_of(pod);
    const auto index = worker_index(job, name);
    if (index && *index < replicas && pod_trains(pod)) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> workers_in_script(const std::string& script) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < script.size()) {
    size_t end = script.find('\n', start);
    if (end == std::string::npos) end = script.size();
    const std::string line = script.substr(start, end - start);
    start = end + 1;
    if (line.rfind("echo ", 0) != 0) continue;
    const std::string host = line.substr(5);
    const size_t stop = host.find_first_of(".: ");
    if (stop != 0 && !host.empty()) out.push_back(host.substr(0, stop));
  }
  return out;
}

std::optional<Event> membership_event(const std::vector<std::string>& before,
                                      const std::vector<std::string>& after) {
  std::vector<std::string> old_sorted = before, new_sorted = after, added, removed;
  std::sort(old_sorted.begin(), old_sorted.end());
  std::sort(new_sorted.begin(), new_sorted.end());
  std::set_difference(new_sorted.begin(), new_sorted.end(), old_sorted.begin(), old_sorted.end(),
                      std::back_inserter(added));
  std::set_difference(old_sorted.begin(), old_sorted.end(), new_sorted.begin(), new_sorted.end(),
                      std::back_inserter(removed));
  if (added.empty() && removed.empty()) return std::nullopt;
  std::string what;
  if (!added.empty()) what = "added " + join_names(added);
  if (!removed.empty()) what += (what.empty() ? "" : "; ") + ("removed " + join_names(removed));
  return Event{"Normal", kReasonWorkersChanged,
               std::to_string(before.size()) + " -> " + std::to_string(after.size()) +
                   " workers (" + what + ")"};
}

std::string worker_label_selector(const std::string& job_name) {
  return std::string(kLabelJobName) + "=" + job_name + "," + kLabelJobRole + "=worker";
}

}  // namespace mpijob
