#include "local/pods/pod_runtime.h"

#include <fstream>
#include <iostream>
#include <set>

#include "kube/object_meta.h"
#include "local/docker/docker_container.h"
#include "local/rsh/rsh_agent.h"

namespace local {
namespace fs = std::filesystem;
using State = ContainerRunState::State;

namespace {

// bwrap cannot create a mount point under a symlink (/var/run -> /run): make missing ones here,
// on the host, as bwrap would (empty directories, or empty files for file volumes).
void make_mount_points(const std::vector<Mount>& mounts) {
  for (const auto& m : mounts) {
    std::error_code ec;
    const fs::path target(m.mount_path);
    if (fs::exists(target, ec)) continue;
    fs::create_directories(target.parent_path(), ec);
    if (fs::is_directory(m.host_path, ec)) {
      fs::create_directories(target, ec);
    } else {
      std::ofstream touch(target);
    }
  }
}

}  // namespace

PodRuntime::PodRuntime(kube::Client& client, kube::Clock& clock, ProcessLauncher& launcher,
                       RuntimeOptions options)
    : client_(client), clock_(clock), launcher_(launcher), options_(std::move(options)) {}

PodRuntime::~PodRuntime() { stop(); }

void PodRuntime::start() { thread_ = std::thread([this] { loop(); }); }

void PodRuntime::stop() {
  {
    kube::MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::vector<Pod*> all;
  for (auto& [uid, pod] : pods_) all.push_back(&pod);
  stop_pods(all);
  pods_.clear();
}

fs::path PodRuntime::pod_dir(const std::string& ns, const std::string& name) const {
  return options_.work_dir / "pods" / ns / name;
}

void PodRuntime::loop() {
  while (true) {
    try {
      sync_once();
    } catch (const std::exception& e) {
      std::cerr << "korovod: pod runtime: " << e.what() << "\n";
    }
    kube::MutexLock lock(mu_);
    if (clock_.wait_until(lock, cv_, clock_.steady_now() + options_.poll_interval,
                          [this]() KOROVOD_REQUIRES(mu_) { return stopping_; })) {
      return;
    }
  }
}

bool PodRuntime::serves(const kube::Object& pod) const {
  const std::string node = field(pod, "spec").value("nodeName", "");
  return options_.node_name.empty() || node == options_.node_name;
}

void PodRuntime::sync_once() {
  auto list = client_.list(kube::resources::kPods, "", {});
  std::set<std::string> seen;
  for (const auto& obj : list.items) {
    if (serves(obj)) seen.insert(kube::uid_of(obj));
  }
  // Pods gone from the API stop first: a replacement of the same name reuses their directory.
  std::vector<Pod*> gone;
  for (auto& [uid, pod] : pods_) {
    if (!seen.count(uid)) gone.push_back(&pod);
  }
  stop_pods(gone);
  std::erase_if(pods_, [&](const auto& entry) { return !seen.count(entry.first); });
  for (const auto& obj : list.items) {
    if (!serves(obj)) continue;
    const std::string uid = kube::uid_of(obj);
    auto it = pods_.find(uid);
    if (it == pods_.end()) {
      if (kube::has_deletion_timestamp(obj)) continue;
      const std::string phase = field(obj, "status").value("phase", "");
      if (phase == "Succeeded" || phase == "Failed") continue;  // ended before we came
      start_pod(obj);
      continue;
    }
    it->second.object = obj;
    if (kube::has_deletion_timestamp(obj)) {
      finish_deleted_pod(it->second);
      pods_.erase(it);
      continue;
    }
    step_containers(it->second);
    if (docker()) learn_pod_ip(it->second);
    report(it->second);
    refresh_pod_volumes(it->second);
  }
}

void PodRuntime::refresh_pod_volumes(Pod& pod) {
  if (!pod.run.failure_reason.empty()) return;
  const auto now = clock_.steady_now();
  if (now < pod.next_volume_refresh) return;
  pod.next_volume_refresh = now + options_.volume_refresh;
  const std::string ns = kube::namespace_of(pod.object);
  const fs::path dir = pod_dir(ns, kube::name_of(pod.object));
  refresh_volumes(pod.object, client_env_sources(client_, ns), dir);
  if (docker()) apply_volume_ownership(pod.object, dir, /*refresh=*/true);
}

void PodRuntime::learn_pod_ip(Pod& pod) {
  if (pod.pod_ip_known) return;
  for (const auto& c : pod.containers) {
    if (c.state.state != State::Running || c.docker_name.empty()) continue;
    const std::string ip = docker_container_ip(launcher_, options_.docker, c.docker_name);
    if (ip.empty()) continue;
    pod.run.pod_ip = ip;
    pod.pod_ip_known = true;
    return;
  }
}

void PodRuntime::start_pod(const kube::Object& obj) {
  Pod& pod = pods_[kube::uid_of(obj)];
  pod.object = obj;
  const std::string ns = kube::namespace_of(obj), name = kube::name_of(obj);
  const fs::path dir = pod_dir(ns, name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  pod.run.start_time = clock_.now();
  if (docker()) pod.run.pod_ip.clear();  // until the container has one
  for (const auto& c : field(field(obj, "spec"), "containers")) {
    Container container;
    container.spec = c;
    container.state.name = c.value("name", "");
    container.state.reason = "ContainerCreating";
    pod.containers.push_back(std::move(container));
  }
  try {
    const EnvSources sources = client_env_sources(client_, ns);
    const auto volumes = materialize_volumes(obj, sources, dir);
    for (auto& c : pod.containers) {
      const EnvList env = resolve_container_env(obj, c.spec, sources);
      const auto mounts = container_mounts(c.spec, volumes);
      c.launch = docker() ? image_launch(obj, c.spec, env, mounts, options_.defaults)
                          : container_launch(obj, c.spec, env, mounts, dir, options_.defaults);
      if (options_.adjust) options_.adjust(obj, c.spec, c.launch);
    }
    if (options_.isolation == Isolation::Bwrap) {
      for (const auto& c : pod.containers) make_mount_points(c.launch.mounts);
    }
    if (docker()) apply_volume_ownership(obj, dir, /*refresh=*/false);
    if (!pod.containers.empty() && !docker()) {
      write_pod_context(dir, pod.containers[0].launch, options_.isolation, options_.bwrap_path);
    }
    for (auto& c : pod.containers) start_container(pod, c);
  } catch (const std::exception& e) {
    pod.run.failure_reason = "LocalRuntimeError";
    pod.run.failure_message = e.what();
    std::cerr << "korovod: pod " << name << ": " << e.what() << "\n";
  }
  report(pod);
}

void PodRuntime::start_container(const Pod& pod, Container& c) {
  const std::string pod_name = kube::name_of(pod.object);
  auto sink = [log = options_.log, pod_name, name = c.state.name](const std::string& line) {
    if (log) log(pod_name, name, line);
  };
  try {
    c.process = launch(pod, c, sink);
    c.state.state = State::Running;
    c.state.reason.clear();
    c.state.message.clear();
    c.state.started_at = clock_.now();
    c.state.ever_started = true;
  } catch (const std::exception& e) {
    c.state.state = State::Terminated;
    c.state.exit_code = 128;
    c.state.reason = "StartError";
    c.state.message = e.what();
    c.state.finished_at = clock_.now();
    sink(std::string("korovod: cannot start: ") + e.what());
  }
}

std::unique_ptr<LaunchedProcess> PodRuntime::launch(const Pod& pod, Container& c, LineSink sink) {
  if (!docker()) return launcher_.start(sandboxed(c.launch, options_.isolation, options_.bwrap_path), sink);
  const std::string name = kube::name_of(pod.object);
  c.docker_name = docker_container_name(options_.docker, name, c.state.name, ++c.docker_serial);
  return start_docker_container(launcher_, options_.docker, pod.object, c.spec, c.launch, c.docker_name,
                                pod_dir(kube::namespace_of(pod.object), name), std::move(sink));
}

std::chrono::milliseconds restart_backoff(int restarts, std::chrono::milliseconds base,
                                          std::chrono::milliseconds max) {
  auto wait = base;
  for (int i = 0; i < restarts && wait < max; ++i) wait *= 2;
  return std::min(wait, max);
}

void PodRuntime::step_containers(Pod& pod) {
  if (!pod.run.failure_reason.empty()) return;
  const std::string policy = field(pod.object, "spec").value("restartPolicy", "Always");
  const auto now = clock_.steady_now();
  for (auto& c : pod.containers) {
    if (c.state.state == State::Running) {
      auto code = c.process->poll();
      if (!code) continue;
      c.process.reset();
      c.state.finished_at = clock_.now();
      c.state.exit_code = *code;
      c.state.reason = termination_reason(*code);
      if (should_restart(policy, *code)) {
        c.restart_at = now + restart_backoff(c.state.restart_count, options_.restart_backoff,
                                             options_.max_restart_backoff);
        c.state.last_exit_code = *code;
        c.state.last_started_at = c.state.started_at;
        c.state.last_finished_at = c.state.finished_at;
        c.state.state = State::Waiting;
        c.state.reason = "CrashLoopBackOff";
        c.state.message = "back-off restarting failed container";
      } else {
        c.state.state = State::Terminated;
      }
    } else if (c.state.state == State::Waiting && c.restart_at != std::chrono::steady_clock::time_point{} &&
               now >= c.restart_at) {
        ++c.state.restart_count;
        c.restart_at = {};
        pod.pod_ip_known = false;  // a new container may get another address
        start_container(pod, c);
        if (options_.on_restart) options_.on_restart(kube::name_of(pod.object), c.state.name, c.state.restart_count);
    }
  }
}

// As a kubelet does: stop the containers, report the terminal status, then delete the object
// (a terminal pod is deleted at once by the API server, which ends the graceful deletion).
void PodRuntime::finish_deleted_pod(Pod& pod) {
  stop_pod(pod);
  report(pod);
  if (options_.node_name.empty()) return;  // the in-memory API deletes without waiting for us
  kube::DeleteOptions opts;
  opts.precondition_uid = kube::uid_of(pod.object);
  opts.grace_period_seconds = 0;  // stopped: the graceful deletion ends now, as a kubelet ends it
  try {
    client_.remove(kube::resources::kPods, kube::namespace_of(pod.object), kube::name_of(pod.object), opts);
  } catch (const kube::ApiError& e) {
    if (!kube::is_not_found(e) && !kube::is_conflict(e)) throw;
  }
}

void PodRuntime::stop_pods(const std::vector<Pod*>& pods) {
  if (!docker() || pods.size() < 2) {
    for (Pod* pod : pods) stop_pod(*pod);
    return;
  }
  // A container's pid 1 that ignores SIGTERM (a shell, sleep) waits out its whole grace period:
  // stop the pods side by side, not one grace period after another. (Process pods run under
  // bwrap's init, which passes SIGTERM on.)
  std::vector<std::thread> stoppers;
  for (Pod* pod : pods) {
    stoppers.emplace_back([this, pod] {
      try {
        stop_pod(*pod);
      } catch (const std::exception& e) {  // tried again below, on this thread
        std::cerr << "korovod: stopping pod " << kube::name_of(pod->object) << ": " << e.what() << "\n";
      }
    });
  }
  for (auto& t : stoppers) t.join();
  for (Pod* pod : pods) stop_pod(*pod);  // nothing left to do unless a stopper failed
}

void PodRuntime::stop_pod(Pod& pod) {
  int64_t grace_s = field(pod.object, "spec").value("terminationGracePeriodSeconds", int64_t(30));
  auto grace = std::min<std::chrono::milliseconds>(std::chrono::seconds(grace_s), options_.max_grace);
  const std::string ns = kube::namespace_of(pod.object), name = kube::name_of(pod.object);
  if (!name.empty() && !docker()) {
    // No korovod-rsh gets into a stopped pod (it waits for a replacement's context instead, as
    // ssh retries a host whose sshd is gone); then what it started there stops.
    std::error_code ec;
    fs::remove(pod_dir(ns, name) / "context.json", ec);
    stop_rsh_processes(pod_dir(ns, name), grace, clock_);
  }
  for (auto& c : pod.containers) {
    if (!c.process) continue;
    c.state.exit_code = stop_process(*c.process, grace, clock_);
    c.process.reset();
    c.state.state = State::Terminated;
    c.state.reason = termination_reason(c.state.exit_code);
    c.state.finished_at = clock_.now();
  }
}

void PodRuntime::report(Pod& pod) {
  PodRunState run = pod.run;
  run.containers.clear();
  for (const auto& c : pod.containers) run.containers.push_back(c.state);
  const kube::Object old = field(pod.object, "status");
  kube::Object status = pod_status_json(run, clock_.now(), old);
  if (status == pod.reported) return;
  const std::string ns = kube::namespace_of(pod.object), name = kube::name_of(pod.object);
  for (int attempt = 0; attempt < 5; ++attempt) {
    try {
      kube::Object fresh = client_.get(kube::resources::kPods, ns, name);
      if (kube::uid_of(fresh) != kube::uid_of(pod.object)) return;  // replaced by a new pod
      fresh["status"] = status;
      pod.object = client_.update_status(kube::resources::kPods, ns, fresh);
      pod.reported = status;
      return;
    } catch (const kube::ApiError& e) {
      if (kube::is_not_found(e)) return;
      if (!kube::is_conflict(e)) throw;
    }
  }
}

}  // namespace local
