#include "local/docker/docker_container.h"

#include <signal.h>

#include <fstream>
#include <stdexcept>

#include "kube/object_meta.h"
#include "kube/clock_sleep.h"

namespace local {
namespace fs = std::filesystem;
namespace {

std::string signal_name(int signo) {
  switch (signo) {
    case SIGTERM: return "SIGTERM";
    case SIGKILL: return "SIGKILL";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
    default: return std::to_string(signo);
  }
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += (out.empty() ? "" : "; ") + l;
  return out;
}

// Runs the docker CLI to the end; a CLI that cannot be started is an error naming it.
RunResult run_docker(ProcessLauncher& launcher, const DockerOptions& o,
                     std::vector<std::string> args) {
  args.insert(args.begin(), o.docker);
  try {
    return run_to_end(launcher, Exec{std::move(args), o.client_env});
  } catch (const std::runtime_error& e) {
    throw std::runtime_error("cannot run the docker CLI \"" + o.docker + "\" (--docker): " + e.what());
  }
}

}  // namespace

DockerContainer::DockerContainer(ProcessLauncher& launcher, const DockerOptions& options,
                                 std::string name, std::string pod, std::string image,
                                 const std::vector<std::string>& run_argv, LineSink sink)
    : launcher_(launcher), options_(options), name_(std::move(name)), pod_(std::move(pod)),
      image_(std::move(image)), sink_(std::move(sink)) {
  try {
    client_ = launcher_.start(Exec{run_argv, options_.client_env}, sink_);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error("cannot run the docker CLI \"" + options_.docker + "\" (--docker): " + e.what());
  }
}

DockerContainer::~DockerContainer() {
  try {
    if (!client_->poll()) {
      signal(SIGKILL);
      client_->wait();
    }
    ended(client_->poll());
  } catch (const std::exception&) {
    // Best effort: the run's label cleanup (DockerNetwork::remove_all) removes what is left.
  }
}

std::optional<int> DockerContainer::ended(std::optional<int> code) {
  if (!code) return code;
  bool report = false, remove = false;
  {
    kube::MutexLock lock(mu_);
    report = *code == 125 && !reported_;
    remove = client_signalled_;
    reported_ = true;
    client_signalled_ = false;
  }
  if (report && sink_) {
    sink_("korovod: docker could not create the container of pod " + pod_ + " from image " +
          image_ + " (docker run exited 125; docker's own message is above)");
  }
  // The client went before the container it was creating, if any: remove that by name.
  if (remove) run_docker(launcher_, options_, {"rm", "-f", name_});
  return code;
}

std::optional<int> DockerContainer::poll() { return ended(client_->poll()); }

int DockerContainer::wait() { return *ended(client_->wait()); }

void DockerContainer::signal(int signo) {
  if (client_->poll()) return;
  const RunResult kill = run_docker(launcher_, options_, {"kill", "--signal", signal_name(signo), name_});
  if (kill.exit_code == 0) return;
  // No container to signal yet (docker run is still pulling or creating it): stop the client,
  // so it creates none; a container created regardless is removed once the client ended.
  {
    kube::MutexLock lock(mu_);
    client_signalled_ = true;
  }
  client_->signal(signo);
}

std::unique_ptr<DockerContainer> start_docker_container(
    ProcessLauncher& launcher, const DockerOptions& options, const kube::Object& pod,
    const kube::Object& container, const LaunchSpec& launch, const std::string& name,
    const fs::path& pod_dir, LineSink sink) {
  const fs::path env_file = pod_dir / (container.value("name", "") + ".env");
  const DockerRunArgs args = docker_run_args(pod, container, launch, options, name, env_file.string());
  {
    const fs::path tmp = env_file.string() + ".tmp";
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + tmp.string());
    fs::permissions(tmp, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
    out << args.env_file;
    out.close();
    fs::rename(tmp, env_file);
  }
  return std::make_unique<DockerContainer>(launcher, options, name, kube::name_of(pod),
                                           container.value("image", ""), args.argv, std::move(sink));
}

std::string docker_container_ip(ProcessLauncher& launcher, const DockerOptions& options,
                                const std::string& name) {
  const RunResult r = run_docker(
      launcher, options,
      {"inspect", "--format", "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}", name});
  if (r.exit_code != 0 || r.output.empty()) return "";
  const std::string& line = r.output.front();
  return line.substr(0, line.find(' '));
}

DockerCapabilities probe_docker(ProcessLauncher& launcher, const DockerOptions& options) {
  const RunResult r = run_docker(launcher, options, {"info", "--format", "{{.CPUCfsQuota}} {{.MemoryLimit}}"});
  if (r.exit_code != 0) {
    std::vector<std::string> said;  // without the template's empty answer ("false false")
    for (const auto& line : r.output) {
      if (line.find_first_not_of("truefals ") != std::string::npos) said.push_back(line);
    }
    throw std::runtime_error("the docker daemon does not answer (" + options.docker +
                             " info exited " + std::to_string(r.exit_code) + ": " +
                             joined(said) + "); start one, or point DOCKER_HOST at one");
  }
  // The last line: a CLI may print warnings before it.
  const std::string answer = r.output.empty() ? "" : r.output.back();
  if (answer.find(' ') == std::string::npos) {
    throw std::runtime_error(options.docker + " info gave no answer: " + joined(r.output));
  }
  return {answer.substr(0, answer.find(' ')) == "true", answer.substr(answer.find(' ') + 1) == "true"};
}

DockerNetwork::DockerNetwork(ProcessLauncher& launcher, const DockerOptions& options,
                             kube::Clock& clock)
    : launcher_(launcher), options_(options), clock_(clock) {
  const RunResult r = run_docker(launcher_, options_,
                                 {"network", "create", "--driver", "bridge", "--label",
                                  std::string(kRunLabel) + "=" + options_.run_id, options_.network});
  if (r.exit_code != 0) {
    throw std::runtime_error("cannot create the job's docker network " + options_.network + ": " +
                             joined(r.output));
  }
}

DockerNetwork::~DockerNetwork() {
  try {
    remove_all();
  } catch (const std::exception&) {
    // Destructors do not throw; remove_all() called directly reports.
  }
}

std::vector<std::string> DockerNetwork::remove_all() {
  if (removed_) return {};
  const std::string filter = "label=" + std::string(kRunLabel) + "=" + options_.run_id;
  const auto deadline = clock_.steady_now() + std::chrono::seconds(10);
  std::vector<std::string> problems;
  while (true) {
    problems.clear();
    const RunResult ps = run_docker(launcher_, options_, {"ps", "-aq", "--filter", filter});
    std::vector<std::string> ids;
    for (const auto& id : ps.output) {
      if (!id.empty()) ids.push_back(id);
    }
    if (ps.exit_code != 0) problems.push_back("docker ps: " + joined(ps.output));
    if (!ids.empty()) {
      // A container whose --rm removal is under way refuses this; the next round sees it gone.
      std::vector<std::string> rm = {"rm", "-f"};
      rm.insert(rm.end(), ids.begin(), ids.end());
      run_docker(launcher_, options_, rm);
      problems.push_back("containers left: " + joined(ids));
    }
    const RunResult net = run_docker(launcher_, options_, {"network", "rm", options_.network});
    const std::string said = joined(net.output);
    if (net.exit_code != 0 && said.find("not found") == std::string::npos &&
        said.find("No such network") == std::string::npos) {
      problems.push_back("network " + options_.network + ": " + said);
    }
    if (problems.empty() || clock_.steady_now() >= deadline) break;
    kube::sleep_for(clock_, std::chrono::milliseconds(250));
  }
  removed_ = problems.empty();
  return problems;
}

}  // namespace local
