// `korovod run FILE.yaml`: one MPIJob on this machine. The manifest is validated with the
// operator's own validation, created in a MemoryClient, and driven by the operator's own
// controller::Manager (informers, work queue, mpijob::Reconciler) plus the local pod runtime
// and a minimal Job controller for the launcher Job. See operator/local/README.md.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>

#include "kube/clock.h"
#include "local/sandbox/pod_env.h"
#include "local/process/process_launcher.h"

namespace local {

// --runtime: pods as host processes (sandbox.h), or as docker containers of their images
// (docker_run.h, docker_container.h).
enum class PodRuntimeKind { Process, Docker };

struct RunOptions {
  std::filesystem::path manifest;
  std::optional<int> workers;          // overrides Worker replicas
  std::chrono::seconds timeout{0};     // 0: no limit
  bool keep = false;                   // keep the work directory
  bool ssh = false;                    // real sshd per worker instead of the rsh agent
  std::filesystem::path work_dir;      // "": a new directory under $TMPDIR
  std::filesystem::path bin_dir;       // put in front of pods' PATH; holds korovod-rsh
  std::filesystem::path ssh_config_dir;  // docker/ssh (sshd_config, ssh_config)
  std::string host_path = "/usr/local/bin:/usr/bin:/bin";  // the host's PATH, behind bin_dir in pods
  // The host's sanitizer options (ASAN_OPTIONS, LSAN_OPTIONS, UBSAN_OPTIONS, TSAN_OPTIONS): every
  // pod gets them, before its own env, so the programs of a sanitized build run in pods with the
  // same options and suppressions as korovod itself. Nothing else of the host's environment.
  EnvList host_sanitizer_env;
  PodRuntimeKind runtime = PodRuntimeKind::Process;
  std::string docker = "docker";  // --docker: the docker CLI
  // The docker CLI's own environment (PATH, HOME, DOCKER_HOST and the other DOCKER_* the CLI
  // reads), taken from the host's by main; pods get none of it.
  EnvList docker_env;
  std::string run_id;  // labels the run's containers and network; "": a random one
  // --profiles: the admins' profiles (a Helm values file or its profiles map); "": none.
  std::filesystem::path profiles;
};

// Exit codes of `korovod run`.
inline constexpr int kExitSucceeded = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitInvalid = 2;
inline constexpr int kExitTimeout = 124;
inline constexpr int kExitInterrupted = 130;

// Pods' processes are started with `launcher`; time (progress, --timeout, every wait) is `clock`.
int run_local(const RunOptions& options, kube::Clock& clock, ProcessLauncher& launcher,
              std::ostream& out, std::ostream& err, const std::atomic<bool>& interrupted);

}  // namespace local
