// korovod: the user-facing binary (thin: parse flags, wire, run).
//   korovod run FILE.yaml [--workers N] [--timeout D] [--keep] [--ssh] [--work-dir DIR]
//                         [--runtime process|docker] [--docker PATH]
//   korovod kubelet --kubeconfig FILE [--node-name N] [--work-dir DIR]
//   korovod submit|get|logs|delete|top ...   (kubectl_verbs.h; also as kubectl-korovod, the
//                                             kubectl plugin `kubectl korovod`)
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <thread>

#include "cmd/kubectl_verbs.h"
#include "cmd/shutdown_signals.h"
#include "kube/config.h"
#include "kube/rest_client.h"
#include "os/children.h"
#include "local/process/reaper.h"
#include "local/kubelet/kubelet.h"
#include "local/local_run.h"
#include "local/process/process.h"

namespace fs = std::filesystem;

namespace {

// "90", "90s", "5m", "1h" -> seconds.
std::chrono::seconds parse_duration(const std::string& s) {
  size_t used = 0;
  const long v = std::stol(s, &used);
  const std::string unit = s.substr(used);
  if (unit.empty() || unit == "s") return std::chrono::seconds(v);
  if (unit == "m") return std::chrono::minutes(v);
  if (unit == "h") return std::chrono::hours(v);
  throw CLI::ValidationError("--timeout", "use a duration like 90s, 10m or 1h");
}

fs::path own_dir() { return fs::read_symlink("/proc/self/exe").parent_path(); }

// The host's PATH: pods get it behind the korovod binary's directory, ssh-keygen runs with it.
std::string host_path() {
  const char* path = std::getenv("PATH");
  return path ? path : "/usr/local/bin:/usr/bin:/bin";
}

// The sanitizer runtimes' options, which pods get too (LocalRunOptions::host_sanitizer_env).
local::EnvList host_sanitizer_env() {
  local::EnvList env;
  for (const char* name : {"ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS", "TSAN_OPTIONS"}) {
    if (const char* value = std::getenv(name)) env.emplace_back(name, value);
  }
  return env;
}

// The docker CLI's own environment: what it needs to find its daemon, config and plugins.
local::EnvList docker_client_env() {
  local::EnvList env = {{"PATH", host_path()}};
  for (const char* name : {"HOME", "DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_CONFIG", "DOCKER_CERT_PATH",
                           "DOCKER_TLS_VERIFY", "DOCKER_API_VERSION"}) {
    if (const char* value = std::getenv(name)) env.emplace_back(name, value);
  }
  return env;
}

fs::path default_ssh_config_dir() {
  if (const char* d = std::getenv("KOROVOD_SSH_CONFIG_DIR")) return d;
  for (const fs::path& p : {own_dir() / "../share/korovod/ssh", fs::path(KOROVOD_SOURCE_DIR) / "docker/ssh"}) {
    if (fs::exists(p / "sshd_config")) return p;
  }
  return fs::path(KOROVOD_SOURCE_DIR) / "docker/ssh";
}

// What the command line asks for: one of the subcommands, with its options.
struct CommandLine {
  CLI::App* run_cmd = nullptr;
  local::RunOptions run;
  std::string timeout = "0";
  std::optional<int> workers;
  std::string runtime = "process";

  CLI::App* kubelet_cmd = nullptr;
  std::string kubeconfig, node_name;
  fs::path kubelet_dir;
};

void add_run_command(CLI::App& app, CommandLine& c) {
  c.run_cmd = app.add_subcommand(
      "run", "Run an MPIJob manifest on this machine with the operator's own reconciler; exit 0 "
             "only when the MPIJob Succeeded (1 failed, 2 invalid, 124 timeout, 130 interrupted)");
  auto* cmd = c.run_cmd;
  cmd->add_option("file", c.run.manifest, "MPIJob manifest (YAML), the file kubectl apply takes")
      ->required()->check(CLI::ExistingFile);
  cmd->add_option("--workers", c.workers, "override the Worker replicas")->check(CLI::PositiveNumber);
  cmd->add_option("--timeout", c.timeout, "give up after this long (90s, 10m, 1h; 0 = never)");
  cmd->add_flag("--keep", c.run.keep, "keep the work directory (volumes, pod contexts)");
  cmd->add_flag("--ssh", c.run.ssh, "reach workers through a real sshd per worker (the production path) instead of the rsh agent");
  cmd->add_option("--work-dir", c.run.work_dir, "work directory (default: a new one under $TMPDIR)");
  cmd->add_option("--runtime", c.runtime,
                  "how pods run: 'process' (default: host processes, bubblewrap sandboxes, the "
                  "image ignored) or 'docker' (each pod a container of its image on a docker "
                  "network of the job's own, workers' sshd reached over real ssh; every "
                  "container and the network are removed at the end)")
      ->check(CLI::IsMember({"process", "docker"}));
  cmd->add_option("--profiles", c.run.profiles,
                  "the admins' profiles the job may pick with korovod.io/profile: the Helm chart's "
                  "values file, or just its profiles map (docs/profiles.md)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--docker", c.run.docker,
                  "the docker CLI for --runtime docker (default: docker from PATH; it honours "
                  "DOCKER_HOST)");
}

void add_kubelet_command(CLI::App& app, CommandLine& c) {
  c.kubelet_cmd = app.add_subcommand(
      "kubelet", "Register a Node and run the pods bound to it as local processes, reporting "
                 "status to a real API server");
  auto* cmd = c.kubelet_cmd;
  cmd->add_option("--kubeconfig", c.kubeconfig, "kubeconfig of the API server")->required();
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  c.node_name = host;
  cmd->add_option("--node-name", c.node_name, "Node name (default: the hostname)");
  cmd->add_option("--work-dir", c.kubelet_dir, "where pod volumes live (default: a new directory under $TMPDIR)");
}

// Called before any thread starts (pods unblock the signals again). The thread sets
// `interrupted` on the first SIGINT or SIGTERM, saying what that does when `what` is given.
void watch_signals(std::atomic<bool>& interrupted, const char* what) {
  sigset_t set = operator_cmd::block_shutdown_signals();
  std::thread([set, &interrupted, what] {
    int sig = 0;
    sigwait(&set, &sig);
    if (what) std::cerr << "\nkorovod: " << (sig == SIGINT ? "interrupted" : "terminated") << "; " << what << "\n";
    interrupted = true;
  }).detach();
}

// The environment is read in this file only (host_path, host_sanitizer_env,
// default_ssh_config_dir, docker_client_env) and passed down.
int run_mpijob(CommandLine& c, kube::Clock& clock, local::ProcessLauncher& launcher,
               const std::atomic<bool>& interrupted) {
  local::RunOptions& run = c.run;
  run.workers = c.workers;
  run.runtime = c.runtime == "docker" ? local::PodRuntimeKind::Docker : local::PodRuntimeKind::Process;
  if (run.runtime == local::PodRuntimeKind::Docker && run.ssh) {
    std::cerr << "korovod: --ssh is what --runtime docker always does (the image's sshd); ignored\n";
    run.ssh = false;
  }
  run.docker_env = docker_client_env();
  run.timeout = parse_duration(c.timeout);
  run.bin_dir = own_dir();
  run.ssh_config_dir = default_ssh_config_dir();
  // Orphaned descendants of pods come back to us, so none outlives the run (reaper.h).
  if (!korovod::os::become_subreaper()) {
    std::cerr << "korovod: cannot become a child subreaper; orphans of pods are left to init\n";
  }
  run.host_path = host_path();
  run.host_sanitizer_env = host_sanitizer_env();
  const int code = local::run_local(run, clock, launcher, std::cout, std::cerr, interrupted);
  local::reap_all_children(std::chrono::seconds(5), clock);
  return code;
}

int serve_as_kubelet(CommandLine& c, kube::Clock& clock, local::ProcessLauncher& launcher,
                     const std::atomic<bool>& interrupted) {
  local::KubeletOptions ko;
  ko.node_name = c.node_name;
  ko.bin_dir = own_dir();
  ko.host_path = host_path();
  ko.host_sanitizer_env = host_sanitizer_env();
  fs::path dir = c.kubelet_dir;
  if (dir.empty()) {
    std::string tmpl = (fs::temp_directory_path() / "korovod-kubelet-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("cannot create a work directory");
    dir = tmpl;
  }
  fs::create_directories(dir);
  ko.work_dir = fs::canonical(dir);
  kube::RestClient client(kube::load_kubeconfig(c.kubeconfig), {}, clock);
  return local::run_kubelet(client, clock, launcher, ko, interrupted, std::cout);
}

}  // namespace

int main(int argc, char** argv) {
  // As kubectl's plugin (kubectl-korovod on PATH), the same verbs under kubectl's name.
  const bool plugin = fs::path(argv[0]).filename() == "kubectl-korovod";
  CLI::App app{plugin ? "kubectl korovod: MPIJobs from a few flags, and what they are doing"
                      : "korovod: run MPIJobs on this machine (local mode), submit and follow them on a cluster, "
                        "or serve pods of a cluster",
               plugin ? "kubectl korovod" : "korovod"};
  app.require_subcommand(1);
  CommandLine c;
  operator_cmd::KubectlCommandLine k;
  if (!plugin) {
    add_run_command(app, c);
    add_kubelet_command(app, c);
  }
  operator_cmd::add_kubectl_verbs(app, k);
  CLI11_PARSE(app, argc, argv);

  std::atomic<bool> interrupted{false};
  const bool local_mode = c.run_cmd && *c.run_cmd, kubelet = c.kubelet_cmd && *c.kubelet_cmd;
  watch_signals(interrupted, local_mode || kubelet ? "stopping every process of the job" : nullptr);
  kube::RealClock clock;
  local::HostProcessLauncher launcher;
  try {
    if (std::optional<int> code = operator_cmd::run_kubectl_verb(k, interrupted)) return *code;
    if (local_mode) return run_mpijob(c, clock, launcher, interrupted);
    return serve_as_kubelet(c, clock, launcher, interrupted);
  } catch (const std::exception& e) {
    std::cerr << (plugin ? "kubectl korovod: " : "korovod: ") << e.what() << "\n";
    return 1;
  }
}
