#include "kube/mutex.h"
#include "local/local_run.h"

#include <unistd.h>

#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "controller/manager.h"
#include "kube/memory_client.h"
#include "kube/object_meta.h"
#include "kube/clock_sleep.h"
#include "local/docker/docker_container.h"
#include "local/job_controller/job_controller.h"
#include "local/pods/log_book.h"
#include "local/pods/pod_runtime.h"
#include "local/rsh/ssh_mode.h"
#include "local/manifest/profiles.h"
#include "local/manifest/yaml_json.h"
#include "mpijob/builders.h"
#include "mpijob/defaults.h"
#include "mpijob/launch_mode.h"
#include "mpijob/progress.h"
#include "mpijob/schema_types.h"
#include "mpijob/validation.h"

namespace local {
namespace fs = std::filesystem;
namespace {

kube::Object read_mpijob(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::stringstream text;
  text << in.rdbuf();
  for (auto& doc : yaml_documents(text.str())) {
    if (doc.value("kind", "") == "MPIJob") return doc;
  }
  throw std::runtime_error(path.string() + " has no MPIJob document");
}


// Prints what changed since the last call: objects created, pod phases, MPIJob conditions.
class Progress {
 public:
  // out_mu: held while writing to out, shared with everything else that writes there.
  Progress(kube::Client& client, kube::Clock& clock, std::string ns, std::ostream& out,
           kube::Mutex& out_mu, std::chrono::steady_clock::time_point start)
      : client_(client), clock_(clock), ns_(std::move(ns)), out_(out), out_mu_(out_mu), start_(start) {}

  void poll() {
    for (const auto* r : {&kube::resources::kSecrets, &kube::resources::kConfigMaps,
                          &kube::resources::kServices, &kube::resources::kJobs}) {
      for (const auto& o : client_.list(*r, ns_, {}).items) note("created " + r->kind + " " + kube::name_of(o));
    }
    for (const auto& p : client_.list(kube::resources::kPods, ns_, {}).items) {
      const std::string phase = field(p, "status").value("phase", "Pending");
      const std::string role = job_role(p);
      std::string what = role == "launcher" ? "launcher pod " : "worker pod ";
      note(kube::uid_of(p) + phase,
           what + kube::name_of(p) + " " + (phase == "Running" && role == "launcher" ? "started" : phase));
    }
  }
  // The MPIJob's status.progress as one line, when it says something new (docs/progress.md).
  void training(const kube::Object& job) {
    const std::string summary = mpijob::progress_summary(job.value("/status/progress"_json_pointer, kube::Object()));
    if (summary == last_training_) return;
    if (summary.empty()) {
      say("progress: cleared (the launcher started the training again)");
    } else {
      say("progress: " + summary);
    }
    last_training_ = summary;
  }
  void note(const std::string& line) { note(line, line); }
  void note(const std::string& key, const std::string& line) {
    if (!seen_.insert(key).second) return;
    say(line);
  }
  void say(const std::string& line) {
    const double s = std::chrono::duration<double>(clock_.steady_now() - start_).count();
    kube::MutexLock lock(out_mu_);
    out_ << fmt::format("korovod: [{:6.1f}s] {}\n", s, line) << std::flush;
  }

 private:
  kube::Client& client_;
  kube::Clock& clock_;
  const std::string ns_;
  std::ostream& out_;
  kube::Mutex& out_mu_;
  const std::chrono::steady_clock::time_point start_;
  std::set<std::string> seen_;
  std::string last_training_;
};

const kube::Object* true_condition(const kube::Object& job, const std::string& type) {
  for (const auto& c : field(field(job, "status"), "conditions")) {
    if (c.value("type", "") == type && c.value("status", "") == "True") return &c;
  }
  return nullptr;
}

// container_restarts: every restart the pod runtime made, also in pods deleted since (the Job
// controller deletes the launcher pod once its restarts reach backoffLimit).
int summarize(const kube::Object& job, int container_restarts, const std::string& ns,
              const std::string& outcome, std::chrono::steady_clock::duration took, std::ostream& out) {
  int restarts = field(job, "status").value("restartCount", 0);
  int launcher_failures = field(field(field(job, "status"), "replicaStatuses"), "Launcher").value("failed", 0);
  std::string reason, message;
  for (const char* type : {"Succeeded", "Failed"}) {
    if (const auto* c = true_condition(job, type)) reason = c->value("reason", ""), message = c->value("message", "");
  }
  out << "korovod: ---- summary ----\n"
      << "korovod: MPIJob " << ns << "/" << kube::name_of(job) << ": " << outcome << "\n"
      << fmt::format("korovod: duration {:.1f}s\n", std::chrono::duration<double>(took).count())
      << "korovod: restarts: " << restarts << " worker pod(s) recreated, " << launcher_failures
      << " launcher failure(s), " << container_restarts << " container restart(s)\n";
  if (!reason.empty()) out << "korovod: reason: " << reason << "\n";
  if (!message.empty()) out << "korovod: message: " << message << "\n";
  return outcome == "Succeeded" ? kExitSucceeded : kExitFailed;
}

// Pods as host processes: bubblewrap when it works here, the host's PATH behind bin_dir.
void configure_process_pods(const RunOptions& o, const std::string& ns, const fs::path& work,
                            RuntimeOptions& ro, std::ostream& err) {
  std::string why;
  if (!bwrap_usable(ro.bwrap_path, &why)) {
    ro.isolation = Isolation::Rewrite;
    err << "korovod: bubblewrap is not usable here (" << why << "):\n"
        << "korovod:   falling back to rewriting mount paths in commands and env; pods share the "
           "host's hostname and mounts\n";
  }
  ro.defaults.host_path_env = o.host_path;
  ro.defaults.path_prepend = {o.bin_dir.string()};
  ro.defaults.python_path = build_tree_python_path(o.bin_dir);
  ro.defaults.extra_env = local_pod_env(work, geteuid() == 0);
  for (const auto& [name, value] : o.host_sanitizer_env) set_env(ro.defaults.extra_env, name, value);
  set_env(ro.defaults.extra_env, "KOROVOD_POD_NAMESPACE", ns);
}

std::string random_run_id() {
  std::random_device random;
  return fmt::format("{:08x}{:02x}", random(), random() & 0xff);
}

// Pods as docker containers: the daemon must answer; limits it cannot enforce are left out.
DockerOptions docker_options(const RunOptions& o, ProcessLauncher& launcher, std::ostream& err) {
  DockerOptions d;
  d.docker = o.docker;
  d.client_env = o.docker_env;
  d.run_id = o.run_id.empty() ? random_run_id() : o.run_id;
  d.network = "korovod-" + d.run_id;
  const DockerCapabilities can = probe_docker(launcher, d);
  d.cpu_limits = can.cpu_limits;
  d.memory_limits = can.memory_limits;
  if (!can.cpu_limits) err << "korovod: this docker daemon cannot limit CPU; resources.limits.cpu is not applied\n";
  if (!can.memory_limits) err << "korovod: this docker daemon cannot limit memory; resources.limits.memory is not applied\n";
  return d;
}

// The manifest's MPIJob (namespace "default" when it names none, --workers applied), checked as
// the API server and the operator would; nullopt after printing why it is not valid.
std::optional<kube::Object> read_valid_mpijob(const RunOptions& o, std::ostream& err) {
  kube::Object obj = read_mpijob(o.manifest);
  auto& meta = obj["metadata"];
  if (!meta.contains("namespace")) meta["namespace"] = "default";
  const auto refuse = [&](const std::vector<mpijob::FieldError>& errors) {
    err << "korovod: " << o.manifest.string() << " is not a valid MPIJob:\n";
    for (const auto& e : errors) err << "  " << e.to_string() << "\n";
    return std::nullopt;
  };
  // The field types the API server would check against the CRD, before anything reads them.
  if (const auto errors = mpijob::check_schema_types(obj); !errors.empty()) return refuse(errors);
  if (o.workers) obj["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = *o.workers;
  mpijob::MPIJob job(obj);
  mpijob::apply_defaults(job);
  if (const auto errors = mpijob::validate(job); !errors.empty()) return refuse(errors);
  return obj;
}

// `requested`, or a new directory under $TMPDIR when empty; made, and returned canonical.
fs::path make_work_dir(const fs::path& requested) {
  fs::path work = requested;
  if (work.empty()) {
    std::string tmpl = (fs::temp_directory_path() / "korovod-run-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("cannot create a work directory");
    work = tmpl;
  }
  fs::create_directories(work);
  return fs::canonical(work);
}

// How the launcher reaches the workers, for the "created" line.
std::string connection_summary(const RunOptions& o, const RuntimeOptions& ro) {
  if (o.runtime == PodRuntimeKind::Docker) {
    return "docker network " + ro.docker.network + ", label " + kRunLabel + "=" + ro.docker.run_id;
  }
  return o.ssh ? "sshd per worker" : "rsh agent";
}

// RuntimeOptions::adjust: what local mode changes in a container's launch before it starts.
void adjust_launch(const RunOptions& o, const kube::Object& manifest, const fs::path& work,
                   SshMode& ssh, Isolation isolation, const kube::Object& pod,
                   const kube::Object& container, LaunchSpec& launch) {
  const std::string role = job_role(pod), pod_name = kube::name_of(pod);
  if (o.runtime == PodRuntimeKind::Docker) {
    // Open MPI's mpirun refuses root without this consent; local mode has always given it
    // to pods that run as root (the examples' pods do), and the images do not set it.
    if (!runs_as_root(pod, container)) return;
    for (const char* k : {"OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"}) {
      if (!get_env(launch.env, k)) set_env(launch.env, k, "1");
    }
    return;
  }
  mpijob::MPIJob job(manifest);
  mpijob::apply_defaults(job);
  const std::string ssh_path = job.ssh_auth_mount_path();
  if (o.ssh && mpijob::launch_mode(job) == mpijob::LaunchMode::Agent) {
    throw std::invalid_argument("--ssh runs the ssh path, and " + job.name() + " asks for " +
                                mpijob::kAnnotationLaunch + ": agent (no sshd); run it without --ssh");
  }
  if (!o.ssh) {
    wire_for_rsh_agent(pod, launch, o.bin_dir, work / "rsh-as-ssh");
  } else if (role == "worker" && is_default_sshd(launch)) {
    ssh.adjust_worker(pod_name, mpijob::host_fqdn(job, pod_name, {}), ssh_path,
                      work / "pods" / kube::namespace_of(manifest) / pod_name, launch);
  } else if (role == "launcher") {
    std::vector<std::pair<std::string, std::string>> workers;
    for (int32_t i = 0; i < job.replicas(mpijob::ReplicaType::Worker); ++i) {
      const std::string w = mpijob::worker_name(job, i);
      workers.emplace_back(w, mpijob::host_fqdn(job, w, {}));
    }
    ssh.adjust_launcher(launch, isolation, ssh_path, workers);
  }
}

// The operator's controller on the in-memory API, on a thread of its own. Its log (conflict
// retries, events) goes to a file; progress lines tell the story.
class InProcessOperator {
 public:
  // with_profiles: the run has the profiles ConfigMap (kProfilesConfigMap) in the job's namespace.
  // logs: the pods' output, read for the MPIJob's training progress.
  InProcessOperator(kube::Client& client, kube::Clock& clock, const std::string& ns,
                    const fs::path& log_path, bool with_profiles, controller::LauncherLogs& logs)
      : log_file_(log_path),
        log_(log_file_, controller::LogFormat::Text, controller::LogLevel::Info, clock),
        manager_(client, options(ns, log_, with_profiles, logs), clock),
        thread_([this](std::stop_token stop) { manager_.run(stop); }) {}

  void stop() {
    thread_.request_stop();
    if (thread_.joinable()) thread_.join();
  }

 private:
  static controller::ManagerOptions options(const std::string& ns, controller::Logger& log,
                                            bool with_profiles, controller::LauncherLogs& logs) {
    controller::ManagerOptions mo;
    mo.launcher_logs = &logs;
    mo.progress.interval = std::chrono::seconds(1);  // the log is in memory: reading it costs nothing
    mo.namespaces = {ns};
    if (with_profiles) {
      mo.reconciler.profiles_namespace = ns;
      mo.reconciler.profiles_name = kProfilesConfigMap;
    }
    mo.threadiness = 1;
    mo.log = &log;
    return mo;
  }

  std::ofstream log_file_;
  controller::Logger log_;
  controller::Manager manager_;
  std::jthread thread_;  // last: stopped and joined before the manager goes
};

struct Outcome {
  std::string name;  // Succeeded, Failed, Interrupted or TimedOut
  kube::Object job;  // the MPIJob as it ended
};

// Syncs the Job controller and reports progress until the MPIJob ends, the run is interrupted
// or its timeout passes.
Outcome wait_for_outcome(kube::Client& client, kube::Clock& clock, JobController& jobs,
                         Progress& progress, const kube::Object& manifest, const RunOptions& o,
                         std::chrono::steady_clock::time_point start,
                         const std::atomic<bool>& interrupted) {
  const std::string ns = kube::namespace_of(manifest), name = kube::name_of(manifest);
  Outcome outcome;
  while (outcome.name.empty()) {
    kube::sleep_for(clock, std::chrono::milliseconds(100));
    jobs.sync_all();
    progress.poll();
    outcome.job = client.get(mpijob::kMPIJobs, ns, name);
    progress.training(outcome.job);
    for (const char* c : {"Created", "Running", "Restarting"}) {
      if (const auto* cond = true_condition(outcome.job, c)) progress.note("MPIJob " + std::string(c) + ": " + cond->value("message", ""));
    }
    if (true_condition(outcome.job, "Succeeded")) outcome.name = "Succeeded";
    else if (true_condition(outcome.job, "Failed")) outcome.name = "Failed";
    else if (interrupted) outcome.name = "Interrupted";
    else if (o.timeout.count() > 0 && clock.steady_now() - start > o.timeout) outcome.name = "TimedOut";
  }
  return outcome;
}

// Prints the summary, keeps or removes the work directory; returns the exit code.
int finish_run(const RunOptions& o, const Outcome& outcome, int container_restarts,
               std::chrono::steady_clock::duration took, const fs::path& work, std::ostream& out) {
  int code = summarize(outcome.job, container_restarts, kube::namespace_of(outcome.job),
                       outcome.name, took, out);
  if (outcome.name == "Interrupted") code = kExitInterrupted;
  if (outcome.name == "TimedOut") code = kExitTimeout;
  if (o.keep) {
    out << "korovod: work directory kept: " << work.string() << "\n";
  } else {
    std::error_code ec;
    fs::remove_all(work, ec);
  }
  return code;
}

}  // namespace

int run_local(const RunOptions& o, kube::Clock& clock, ProcessLauncher& launcher,
              std::ostream& out, std::ostream& err, const std::atomic<bool>& interrupted) {
  const std::optional<kube::Object> obj = read_valid_mpijob(o, err);
  if (!obj) return kExitInvalid;
  std::optional<kube::Object> profiles;
  try {
    profiles = profiles_config_map(o.profiles, *obj);
  } catch (const std::invalid_argument& e) {
    err << "korovod: " << o.manifest.string() << ": " << e.what() << "\n";
    return kExitInvalid;
  }
  const kube::Object& meta = obj->at("metadata");
  const std::string ns = meta.at("namespace"), name = meta.value("name", "");
  const auto start = clock.steady_now();

  RuntimeOptions ro;
  // Docker first: a daemon that does not answer fails the run before anything is made.
  std::optional<DockerNetwork> network;  // outlives the runtime: removed after the pods stop
  if (o.runtime == PodRuntimeKind::Docker) {
    ro.isolation = Isolation::Docker;
    ro.docker = docker_options(o, launcher, err);
    network.emplace(launcher, ro.docker, clock);
  }
  const fs::path work = make_work_dir(o.work_dir);
  ro.work_dir = work;
  if (o.runtime == PodRuntimeKind::Process) configure_process_pods(o, ns, work, ro, err);
  SshMode ssh(o.ssh_config_dir, work, launcher, {{"PATH", o.host_path}});
  kube::Mutex out_mu;
  PodLogBook pod_logs;
  ro.log = [&](const std::string& pod, const std::string& container, const std::string& line) {
    pod_logs.add(pod, container, line);
    kube::MutexLock lock(out_mu);
    out << "[" << pod << "] " << line << "\n" << std::flush;
  };
  ro.adjust = [&](const kube::Object& pod, const kube::Object& container, LaunchSpec& launch) {
    adjust_launch(o, *obj, work, ssh, ro.isolation, pod, container, launch);
  };

  kube::MemoryClient client(clock);
  Progress progress(client, clock, ns, out, out_mu, start);
  std::atomic<int> container_restarts{0};
  ro.on_restart = [&](const std::string& pod, const std::string& container, int count) {
    pod_logs.restarted(pod, container);  // a new container's log starts empty, as a kubelet's
    ++container_restarts;
    progress.say(fmt::format("pod {}: container {} restarted (restart {})", pod, container, count));
  };
  if (profiles) client.create(kube::resources::kConfigMaps, ns, *profiles);
  client.create(mpijob::kMPIJobs, ns, *obj);
  progress.say("MPIJob " + ns + "/" + name + " created (work dir " + work.string() + ", " +
               connection_summary(o, ro) + ")");

  InProcessOperator controller(client, clock, ns, work / "operator.log", profiles.has_value(), pod_logs);
  PodRuntime runtime(client, clock, launcher, ro);
  runtime.start();
  JobController jobs(client, clock);
  const Outcome outcome = wait_for_outcome(client, clock, jobs, progress, *obj, o, start, interrupted);
  progress.say("MPIJob " + outcome.name + "; stopping pods");
  runtime.stop();
  if (network) {
    for (const auto& problem : network->remove_all()) err << "korovod: docker cleanup: " << problem << "\n";
  }
  controller.stop();
  return finish_run(o, outcome, container_restarts.load(), clock.steady_now() - start, work, out);
}

}  // namespace local
