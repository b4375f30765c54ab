#include "cli/cluster_reads.h"

#include <algorithm>
#include <vector>

#include "mpijob/types.h"

namespace cli {

using kube::Object;

std::string job_selector(const std::string& name, const std::string& role) {
  std::string s = std::string(mpijob::kLabelJobName) + "=" + name;
  if (!role.empty()) s += "," + std::string(mpijob::kLabelJobRole) + "=" + role;
  return s;
}

std::optional<Object> launcher_pod(kube::Client& api, const std::string& ns, const std::string& name) {
  kube::ListOptions o;
  o.label_selector = job_selector(name, "launcher");
  std::vector<Object> pods = api.list(kube::resources::kPods, ns, o).items;
  if (pods.empty()) return std::nullopt;
  return *std::max_element(pods.begin(), pods.end(), [](const Object& a, const Object& b) {
    return a["metadata"].value("creationTimestamp", "") < b["metadata"].value("creationTimestamp", "");
  });
}

bool drain_lines(kube::LineStream& stream, const std::atomic<bool>& interrupted,
                 const std::function<void(const std::string&)>& line) {
  while (!stream.ended() && !interrupted) {
    if (auto text = stream.next(std::chrono::milliseconds(200))) line(*text);
  }
  return interrupted.load();
}

std::string container_of(const Object& pod) {
  return pod.value("/spec/containers/0/name"_json_pointer, std::string("launcher"));
}

}  // namespace cli
