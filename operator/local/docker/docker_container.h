// Pods as docker containers (`korovod run --runtime docker`), the part that runs the docker
// CLI, always through the ProcessLauncher it is given (fake_process_launcher.h in tests):
//
// - DockerContainer: one container run attached (`docker run --rm --name <unique> ...`,
//   docker_run.h). The client streams the container's output and exits with its exit code (137
//   when it was killed), so it is the LaunchedProcess the pod runtime polls and waits on. A
//   signal goes to the container (`docker kill --signal`), not to the client: killing the
//   client would leave the container running. Only when docker kill finds no container (the
//   client is still creating it) is the client's group signalled, and the container removed by
//   name once the client has gone. Exit code 125 (docker could not create the container: an
//   image it does not have and cannot pull, a bad option) gets a line naming the pod and image.
// - DockerNetwork: the job's user-defined bridge network, created first, and remove_all(),
//   which removes every container labelled with the run and then the network (also from the
//   destructor, so error paths leave nothing behind).
// - probe_docker: whether the daemon answers, and which limits it can enforce.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kube/clock.h"
#include "kube/mutex.h"
#include "local/docker/docker_run.h"
#include "local/process/process_launcher.h"

namespace local {

class DockerContainer final : public LaunchedProcess {
 public:
  // Starts `run_argv` (a docker run command line) with options.client_env.
  DockerContainer(ProcessLauncher& launcher, const DockerOptions& options, std::string name,
                  std::string pod, std::string image, const std::vector<std::string>& run_argv,
                  LineSink sink);
  ~DockerContainer() override;  // a container still running is killed first
  DockerContainer(const DockerContainer&) = delete;
  DockerContainer& operator=(const DockerContainer&) = delete;

  const std::string& name() const { return name_; }
  std::optional<int> poll() override;
  void signal(int signo) override;  // docker kill --signal
  int wait() override;

 private:
  std::optional<int> ended(std::optional<int> code);  // reports 125 once, cleans up after the client

  ProcessLauncher& launcher_;
  const DockerOptions options_;
  const std::string name_, pod_, image_;
  const LineSink sink_;
  std::unique_ptr<LaunchedProcess> client_;
  kube::Mutex mu_;
  bool client_signalled_ KOROVOD_GUARDED_BY(mu_) = false;  // the container may outlive its client
  bool reported_ KOROVOD_GUARDED_BY(mu_) = false;
};

// Builds the container's docker run (docker_run.h), writes its env file to
// <pod_dir>/<container>.env (mode 0600: it may hold Secret values) and starts it.
std::unique_ptr<DockerContainer> start_docker_container(
    ProcessLauncher& launcher, const DockerOptions& options, const kube::Object& pod,
    const kube::Object& container, const LaunchSpec& launch, const std::string& name,
    const std::filesystem::path& pod_dir, LineSink sink);

// The container's IP on the job's network (docker inspect); "" when it has none (yet).
std::string docker_container_ip(ProcessLauncher& launcher, const DockerOptions& options,
                                const std::string& name);

struct DockerCapabilities {
  bool cpu_limits = false;
  bool memory_limits = false;
};
// `docker info`; throws std::runtime_error naming the CLI and what it said when the daemon
// does not answer.
DockerCapabilities probe_docker(ProcessLauncher& launcher, const DockerOptions& options);

class DockerNetwork {
 public:
  // docker network create --driver bridge --label korovod.run=<run id> <options.network>;
  // throws std::runtime_error with docker's output when that fails.
  DockerNetwork(ProcessLauncher& launcher, const DockerOptions& options, kube::Clock& clock);
  ~DockerNetwork();  // remove_all(), its problems ignored
  DockerNetwork(const DockerNetwork&) = delete;
  DockerNetwork& operator=(const DockerNetwork&) = delete;

  // Removes every container labelled with the run (docker rm -f), then the network (retried for
  // up to 10 s while a container's removal is still under way). Idempotent; returns what could
  // not be removed, one line each, empty when all went.
  std::vector<std::string> remove_all();

 private:
  ProcessLauncher& launcher_;
  const DockerOptions options_;
  kube::Clock& clock_;
  bool removed_ = false;
};

}  // namespace local
