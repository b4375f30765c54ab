#include "kube/mutex.h"
#include "local/kubelet/kubelet.h"

#include <sys/sysinfo.h>
#include <unistd.h>

#include <iostream>
#include <thread>

#include <fmt/format.h>

#include "kube/clock_sleep.h"
#include "local/pods/pod_runtime.h"

namespace local {
namespace {

const kube::Resource kLeases{"coordination.k8s.io", "v1", "leases", "Lease", true};

std::string micro_time(kube::Clock& clock) {
  const auto now = clock.now();
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() % 1000000;
  std::string s = kube::format_time(now);  // ...Z
  s.pop_back();
  return fmt::format("{}.{:06d}Z", s, us);
}

kube::Object node_conditions(kube::Clock& clock) {
  const std::string now = kube::format_time(clock.now());
  auto cond = [&](const char* type, const char* status, const char* reason, const char* msg) {
    return kube::Object{{"type", type}, {"status", status}, {"reason", reason}, {"message", msg},
                        {"lastHeartbeatTime", now}, {"lastTransitionTime", now}};
  };
  return kube::Object::array(
      {cond("Ready", "True", "KubeletReady", "korovod kubelet is posting ready status"),
       cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "no memory pressure"),
       cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "no disk pressure"),
       cond("PIDPressure", "False", "KubeletHasSufficientPID", "no PID pressure")});
}

// Creates the object, or writes its status (or spec) onto the current one; retried on conflict
// (the node lifecycle controller edits a new Node right after it appears).
void upsert(kube::Client& client, const kube::Resource& r, const std::string& ns,
            const kube::Object& desired, bool status) {
  for (int attempt = 0;; ++attempt) {
    try {
      kube::Object current;
      try {
        current = client.get(r, ns, desired["metadata"]["name"]);
      } catch (const kube::ApiError& e) {
        if (!kube::is_not_found(e)) throw;
        current = client.create(r, ns, desired);
      }
      if (status) {
        current["status"] = desired["status"];
        client.update_status(r, ns, current);
      } else {
        current["spec"] = desired["spec"];
        client.update(r, ns, current);
      }
      return;
    } catch (const kube::ApiError& e) {
      if ((!kube::is_conflict(e) && !kube::is_already_exists(e)) || attempt >= 5) throw;
    }
  }
}

}  // namespace

kube::Object node_object(const std::string& name, int cpus, int64_t memory_kib) {
  kube::Object capacity = {{"cpu", std::to_string(cpus)},
                           {"memory", std::to_string(memory_kib) + "Ki"},
                           {"pods", "110"}};
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", name},
            {"labels", {{"kubernetes.io/hostname", name}, {"kubernetes.io/os", "linux"},
                        {"kubernetes.io/arch", "amd64"}, {"korovod.dev/local-kubelet", "true"}}}}},
          {"spec", kube::Object::object()},
          {"status",
           {{"capacity", capacity},
            {"allocatable", capacity},
            {"addresses", kube::Object::array({{{"type", "InternalIP"}, {"address", "127.0.0.1"}},
                                               {{"type", "Hostname"}, {"address", name}}})},
            {"nodeInfo", {{"kubeletVersion", "v1.31.0-korovod"}, {"operatingSystem", "linux"},
                          {"architecture", "amd64"}, {"containerRuntimeVersion", "korovod-local://0.1"}}}}}};
}

kube::Object lease_object(const std::string& node, int lease_seconds, kube::Clock& clock) {
  return {{"apiVersion", "coordination.k8s.io/v1"},
          {"kind", "Lease"},
          {"metadata", {{"name", node}, {"namespace", "kube-node-lease"}}},
          {"spec", {{"holderIdentity", node}, {"leaseDurationSeconds", lease_seconds},
                    {"renewTime", micro_time(clock)}}}};
}

int run_kubelet(kube::Client& client, kube::Clock& clock, ProcessLauncher& launcher,
                const KubeletOptions& o, const std::atomic<bool>& stop, std::ostream& out) {
  struct sysinfo si{};
  sysinfo(&si);
  const int64_t mem_kib = int64_t(si.totalram) * si.mem_unit / 1024;
  const int cpus = int(std::thread::hardware_concurrency());
  auto heartbeat = [&] {
    kube::Object node = node_object(o.node_name, cpus, mem_kib);
    node["status"]["conditions"] = node_conditions(clock);
    upsert(client, kube::resources::kNodes, "", node, true);
    upsert(client, kLeases, "kube-node-lease", lease_object(o.node_name, o.lease_seconds, clock), false);
  };
  heartbeat();
  out << "korovod kubelet: node " << o.node_name << " registered (cpu " << cpus << ", memory "
      << mem_kib << "Ki); running pods bound to it\n" << std::flush;

  RuntimeOptions ro;
  ro.work_dir = o.work_dir;
  ro.node_name = o.node_name;
  ro.poll_interval = std::chrono::milliseconds(250);
  std::string why;
  if (!bwrap_usable(ro.bwrap_path, &why)) {
    ro.isolation = Isolation::Rewrite;
    out << "korovod kubelet: bubblewrap is not usable (" << why << "); rewriting mount paths\n";
  }
  ro.defaults.host_path_env = o.host_path;
  ro.defaults.path_prepend = {o.bin_dir.string()};
  ro.defaults.python_path = build_tree_python_path(o.bin_dir);
  ro.defaults.extra_env = local_pod_env(o.work_dir, geteuid() == 0);
  for (const auto& [name, value] : o.host_sanitizer_env) set_env(ro.defaults.extra_env, name, value);
  ro.adjust = [&](const kube::Object& pod, const kube::Object&, LaunchSpec& launch) {
    wire_for_rsh_agent(pod, launch, o.bin_dir, o.work_dir / "rsh-as-ssh");
  };
  kube::Mutex out_mu;
  ro.log = [&](const std::string& pod, const std::string&, const std::string& line) {
    kube::MutexLock lock(out_mu);
    out << "[" << pod << "] " << line << "\n" << std::flush;
  };
  PodRuntime runtime(client, clock, launcher, ro);
  runtime.start();
  auto next = clock.steady_now() + o.heartbeat;
  while (!stop) {
    kube::sleep_for(clock, std::chrono::milliseconds(200));  // `stop` is a flag: polled
    if (stop) break;
    if (clock.steady_now() < next) continue;
    next = clock.steady_now() + o.heartbeat;
    try {
      heartbeat();
    } catch (const std::exception& e) {
      std::cerr << "korovod kubelet: heartbeat: " << e.what() << "\n";
    }
  }
  runtime.stop();
  return 0;
}

}  // namespace local
