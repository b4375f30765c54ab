#include "cli/commands.h"

#include <algorithm>
#include <ostream>
#include <regex>
#include <stdexcept>

#include "cli/cluster_reads.h"
#include "cli/job_view.h"
#include "cli/yaml_out.h"
#include "kube/api_error.h"
#include "kube/clock_sleep.h"
#include "mpijob/types.h"

namespace cli {
namespace {

using kube::Object;

const std::string kKindName = "mpijob.kubeflow.org";

std::string pod_log_path(const std::string& ns, const std::string& pod, const std::string& container, bool follow) {
  return kube::rest::resource_path(kube::resources::kPods, ns, pod, "log") +
         "?container=" + kube::rest::url_encode(container) + (follow ? "&follow=true" : "");
}

void print_objects(const std::vector<Object>& items, bool single, Output output, std::ostream& out) {
  if (output == Output::kName) {
    for (const Object& o : items) out << kKindName << "/" << o["metadata"].value("name", "") << "\n";
    return;
  }
  const Object doc = single ? items.at(0) : Object{{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}};
  if (output == Output::kJson) out << doc.dump(4) << "\n";
  else out << to_yaml(doc);
}

std::string not_found(const std::string& name) { return "mpijobs.kubeflow.org \"" + name + "\" not found"; }

}  // namespace

std::string RestPodLogs::read(const std::string& ns, const std::string& pod, const std::string& container) {
  return client_.get_text(pod_log_path(ns, pod, container, false));
}

std::unique_ptr<kube::LineStream> RestPodLogs::follow(const std::string& ns, const std::string& pod,
                                                      const std::string& container) {
  return client_.stream_text(pod_log_path(ns, pod, container, true));
}

Output parse_output(const std::string& text) {
  if (text.empty() || text == "wide") return Output::kTable;
  if (text == "yaml") return Output::kYaml;
  if (text == "json") return Output::kJson;
  if (text == "name") return Output::kName;
  throw std::invalid_argument("-o '" + text + "': one of yaml, json, name");
}

bool line_of_rank(const std::string& line, int rank) {
  static const std::regex kTag(R"(^\[(?:[0-9]+,)?([0-9]+)\](?:<std(?:out|err)>:|:| ))");
  std::smatch m;
  return std::regex_search(line, m, kTag) && std::stoi(m[1]) == rank;
}

void print_dry_run(const SubmitRequest& request, Output output, std::ostream& out) {
  print_objects({build_mpijob(request)}, true, output == Output::kTable ? Output::kYaml : output, out);
}

int submit(kube::Client& api, PodLogs& logs, kube::Clock& clock, const SubmitRequest& request,
           const SubmitOptions& options, const std::atomic<bool>& interrupted, Io io) {
  if (options.dry_run) {
    print_dry_run(request, options.output, io.out);
    return 0;
  }
  const Object job = build_mpijob(request);
  try {
    api.create(mpijob::kMPIJobs, request.ns, job);
  } catch (const kube::ApiError& e) {
    if (!kube::is_already_exists(e)) throw;
    io.err << "error: mpijob " << request.name << " already exists in namespace " << request.ns
           << " (kubectl korovod delete " << request.name << " -n " << request.ns << " removes it)\n";
    return 1;
  }
  if (options.output == Output::kName) io.out << kKindName << "/" << request.name << "\n";
  else io.out << kKindName << "/" << request.name << " created\n";
  if (!options.follow) return 0;
  return follow_job(api, logs, clock, request.ns, request.name, {}, interrupted, io);
}

int get(kube::Client& api, const std::string& ns, const std::optional<std::string>& name, Output output, Io io) {
  if (name) {
    Object job;
    try {
      job = api.get(mpijob::kMPIJobs, ns, *name);
    } catch (const kube::ApiError& e) {
      if (!kube::is_not_found(e)) throw;
      io.err << "Error from server (NotFound): " << not_found(*name) << "\n";
      return 1;
    }
    if (output != Output::kTable) {
      print_objects({job}, true, output, io.out);
      return 0;
    }
    kube::ListOptions o;
    o.label_selector = job_selector(*name, "");
    io.out << describe_job(job, api.list(kube::resources::kPods, ns, o).items, Clock::now());
    return 0;
  }
  const std::vector<Object> jobs = api.list(mpijob::kMPIJobs, ns, {}).items;
  if (output != Output::kTable) {
    print_objects(jobs, false, output, io.out);
    return 0;
  }
  if (jobs.empty()) {
    io.err << "No resources found" << (ns.empty() ? "" : " in " + ns + " namespace") << ".\n";
    return 0;
  }
  std::vector<std::vector<std::string>> rows;
  for (const Object& j : jobs) rows.push_back(job_row(j, Clock::now(), ns.empty()));
  io.out << render_table(job_columns(ns.empty()), rows);
  return 0;
}

int top(kube::Client& api, const std::string& ns, Io io) {
  std::vector<std::vector<std::string>> rows;
  for (const Object& j : api.list(mpijob::kMPIJobs, ns, {}).items) {
    if (job_running(j)) rows.push_back(top_row(j, Clock::now()));
  }
  if (rows.empty()) {
    io.err << "No running MPIJobs" << (ns.empty() ? "" : " in " + ns + " namespace") << ".\n";
    return 0;
  }
  io.out << render_table(top_columns(), rows);
  return 0;
}

int remove_job(kube::Client& api, const std::string& ns, const std::string& name, Io io) {
  try {
    kube::DeleteOptions o;
    o.propagation_policy = "Background";  // kubectl delete's default: the pods go after the job
    api.remove(mpijob::kMPIJobs, ns, name, o);
  } catch (const kube::ApiError& e) {
    if (!kube::is_not_found(e)) throw;
    io.err << "Error from server (NotFound): " << not_found(name) << "\n";
    return 1;
  }
  io.out << kKindName << " \"" << name << "\" deleted\n";
  return 0;
}

int logs(kube::Client& api, PodLogs& source, const std::string& ns, const std::string& name, std::optional<int> rank,
         bool follow, const std::atomic<bool>& interrupted, Io io) {
  try {
    api.get(mpijob::kMPIJobs, ns, name);  // a job that is gone may still leave its pods a moment
  } catch (const kube::ApiError& e) {
    if (!kube::is_not_found(e)) throw;
    io.err << "Error from server (NotFound): " << not_found(name) << "\n";
    return 1;
  }
  const std::optional<Object> pod = launcher_pod(api, ns, name);
  if (!pod) {
    io.err << "error: mpijob " << name << " in namespace " << ns << " has no launcher pod (yet)\n";
    return 1;
  }
  const std::string pod_name = (*pod)["metadata"].value("name", "");
  if (const std::string phase = pod->value("/status/phase"_json_pointer, std::string("Pending")); phase == "Pending") {
    io.err << "korovod: launcher pod " << pod_name << " has not started (Pending): no log yet\n";
  }
  auto emit = [&](const std::string& line) {
    if (!rank || line_of_rank(line, *rank)) io.out << line << "\n";
  };
  if (!follow) {
    const std::string text = source.read(ns, pod_name, container_of(*pod));
    size_t start = 0;
    for (size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1) emit(text.substr(start, nl - start));
    if (start < text.size()) emit(text.substr(start));
    return 0;
  }
  std::unique_ptr<kube::LineStream> stream = source.follow(ns, pod_name, container_of(*pod));
  const bool stopped = drain_lines(*stream, interrupted, emit);
  io.out.flush();
  return stopped ? 130 : 0;
}

}  // namespace cli
