#include "harness.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../kube/cluster.h"
#include "kube/object_meta.h"

extern char** environ;

namespace optest {
namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Pods stay Pending and unbound: no scheduler of this name runs, and there are no nodes.
constexpr const char* kNoScheduler = "korovod-test-no-scheduler";

std::string source_dir() { return env_or("KOROVOD_SOURCE_DIR", KOROVOD_SOURCE_DIR_DEFAULT); }

}  // namespace

std::string operator_binary() {
  return env_or("KOROVOD_BIN_DIR", KOROVOD_BIN_DIR_DEFAULT) + "/korovod-operator";
}

std::string kubectl_binary() { return kube::testing::cluster_dir() + "/bin/kubectl"; }

CommandResult run_command(const std::vector<std::string>& argv, const std::string& input,
                          std::chrono::seconds timeout) {
  std::string cmd = "timeout " + std::to_string(timeout.count());
  for (const auto& a : argv) cmd += " " + shell_quote(a);
  std::string in_path;
  if (!input.empty()) {
    char tmpl[] = "/tmp/optest-input-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0) throw std::runtime_error("mkstemp failed");
    if (write(fd, input.data(), input.size()) != static_cast<ssize_t>(input.size())) {
      close(fd);
      throw std::runtime_error("write failed");
    }
    close(fd);
    in_path = tmpl;
    cmd += " < " + shell_quote(in_path);
  }
  cmd += " 2>&1";
  CommandResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("popen failed: " + cmd);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (!in_path.empty()) unlink(in_path.c_str());
  return r;
}

CommandResult kubectl(const std::vector<std::string>& args, const std::string& input) {
  std::vector<std::string> argv = {kubectl_binary(), "--kubeconfig",
                                   kube::testing::cluster_dir() + "/kubeconfig"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv, input);
}

void install_mpijob_crd() {
  auto r = kubectl({"apply", "--server-side", "--force-conflicts", "-f",
                    source_dir() + "/crds/kubeflow.org_mpijobs.yaml"});
  if (r.exit_code != 0) throw std::runtime_error("installing the MPIJob CRD: " + r.output);
  r = kubectl({"wait", "--for=condition=Established", "--timeout=60s",
               "crd/mpijobs.kubeflow.org"});
  if (r.exit_code != 0) throw std::runtime_error("MPIJob CRD not established: " + r.output);
  auto client = kube::testing::make_client();
  const kube::Resource mpijobs{"kubeflow.org", "v2beta1", "mpijobs", "MPIJob", true};
  wait_for([&] {
    try {
      client->list(mpijobs, "", {});
      return true;
    } catch (const kube::ApiError&) {
      return false;
    }
  });
}

void install_podgroup_crds() {
  const char* crd = R"(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: podgroups.%GROUP%}
spec:
  group: %GROUP%
  names: {kind: PodGroup, listKind: PodGroupList, plural: podgroups, singular: podgroup}
  scope: Namespaced
  versions:
  - name: %VERSION%
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
)";
  for (auto [group, version] : {std::pair{"scheduling.volcano.sh", "v1beta1"},
                                std::pair{"scheduling.x-k8s.io", "v1alpha1"}}) {
    std::string y = crd;
    for (auto [k, v] : {std::pair{std::string("%GROUP%"), std::string(group)},
                        std::pair{std::string("%VERSION%"), std::string(version)}}) {
      for (size_t at; (at = y.find(k)) != std::string::npos;) y.replace(at, k.size(), v);
    }
    auto r = kubectl({"apply", "--server-side", "-f", "-"}, y);
    if (r.exit_code != 0) throw std::runtime_error("installing PodGroup CRD: " + r.output);
    r = kubectl({"wait", "--for=condition=Established", "--timeout=60s",
                 std::string("crd/podgroups.") + group});
    if (r.exit_code != 0) throw std::runtime_error("PodGroup CRD not established: " + r.output);
  }
}

OperatorProcess::OperatorProcess(std::vector<std::string> args, std::string log_name,
                                 std::vector<std::string> env) {
  static std::mt19937 rng(std::random_device{}());
  const std::string dir = kube::testing::cluster_dir() + "/operator-logs";
  ::mkdir(dir.c_str(), 0755);
  log_path_ = dir + "/" + log_name + "-" + std::to_string(rng() % 1000000) + ".log";
  const int fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw std::runtime_error("cannot open " + log_path_);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fd, 1);
  posix_spawn_file_actions_adddup2(&fa, fd, 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  std::vector<std::string> argv_s = {operator_binary()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    const std::string name = kv.substr(0, kv.find('='));
    bool overridden = false;
    for (const auto& o : env) overridden = overridden || o.rfind(name + "=", 0) == 0;
    if (!overridden) env_s.push_back(kv);
  }
  env_s.insert(env_s.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  const int rc = posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  ::close(fd);
  if (rc != 0) throw std::runtime_error("cannot start " + argv_s[0]);
}

OperatorProcess::~OperatorProcess() {
  if (running()) {
    ::kill(pid_, SIGKILL);
    wait(std::chrono::seconds(10));
  }
}

void OperatorProcess::signal(int sig) {
  if (!exit_code_) ::kill(pid_, sig);
}

std::optional<int> OperatorProcess::wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!exit_code_) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return exit_code_;
}

bool OperatorProcess::running() { return !wait(std::chrono::milliseconds(0)).has_value(); }

std::string OperatorProcess::log() const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> operator_args(const std::string& ns, std::vector<std::string> extra) {
  std::vector<std::string> a = {"--namespace=" + ns, "--leader-elect=false", "--health-port=0",
                                "--log-level=debug", "--threadiness=4"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

kube::Object mpijob(const JobSpec& s) {
  auto container = [](const std::string& name) {
    return kube::Object{{"name", name}, {"image", "mpioperator/mpi-pi:openmpi"}};
  };
  kube::Object run_policy = kube::Object::object();
  if (!s.clean_pod_policy.empty()) run_policy["cleanPodPolicy"] = s.clean_pod_policy;
  if (s.backoff_limit) run_policy["backoffLimit"] = *s.backoff_limit;
  if (s.ttl) run_policy["ttlSecondsAfterFinished"] = *s.ttl;
  if (s.suspend) run_policy["suspend"] = true;
  if (!s.managed_by.empty()) run_policy["managedBy"] = s.managed_by;
  kube::Object spec = {
      {"slotsPerWorker", 1},
      {"runPolicy", run_policy},
      {"mpiReplicaSpecs",
       {{"Launcher",
         {{"replicas", 1},
          {"template", {{"spec", {{"schedulerName", kNoScheduler},
                                  {"containers", {container("launcher")}}}}}}}},
        {"Worker",
         {{"replicas", s.workers},
          {"restartPolicy", s.worker_restart_policy},
          {"template", {{"spec", {{"schedulerName", kNoScheduler},
                                  {"containers", {container("worker")}}}}}}}}}}};
  if (!s.launcher_creation_policy.empty()) {
    spec["launcherCreationPolicy"] = s.launcher_creation_policy;
  }
  return {{"apiVersion", "kubeflow.org/v2beta1"},
          {"kind", "MPIJob"},
          {"metadata", {{"name", s.name}}},
          {"spec", spec}};
}

std::optional<kube::Object> try_get(kube::Client& c, const kube::Resource& r,
                                    const std::string& ns, const std::string& name) {
  try {
    return c.get(r, ns, name);
  } catch (const kube::ApiError& e) {
    if (kube::is_not_found(e)) return std::nullopt;
    throw;
  }
}

std::optional<kube::Object> condition(const kube::Object& job, const std::string& type) {
  if (!job.contains("status") || !job["status"].contains("conditions")) return std::nullopt;
  for (const auto& c : job["status"]["conditions"]) {
    if (c.value("type", "") == type) return c;
  }
  return std::nullopt;
}

bool has_condition(kube::Client& c, const std::string& ns, const std::string& job,
                   const std::string& type, const std::string& status) {
  const kube::Resource mpijobs{"kubeflow.org", "v2beta1", "mpijobs", "MPIJob", true};
  auto j = try_get(c, mpijobs, ns, job);
  if (!j) return false;
  auto cond = condition(*j, type);
  return cond && cond->value("status", "") == status;
}

std::vector<kube::Object> worker_pods(kube::Client& c, const std::string& ns,
                                      const std::string& job) {
  kube::ListOptions o;
  o.label_selector = "training.kubeflow.org/job-name=" + job + ",training.kubeflow.org/job-role=worker";
  return c.list(kube::resources::kPods, ns, o).items;
}

std::vector<kube::Object> launcher_pods(kube::Client& c, const std::string& ns,
                                        const std::string& job) {
  kube::ListOptions o;
  o.label_selector = "training.kubeflow.org/job-name=" + job + ",training.kubeflow.org/job-role=launcher";
  return c.list(kube::resources::kPods, ns, o).items;
}

std::vector<kube::Object> events_for(kube::Client& c, const std::string& ns,
                                     const std::string& name) {
  kube::ListOptions o;
  o.field_selector = "involvedObject.name=" + name;
  return c.list(kube::resources::kEvents, ns, o).items;
}

void set_pod_phase(kube::Client& c, const std::string& ns, const std::string& pod,
                   const std::string& phase, const std::string& reason,
                   const std::string& message, int exit_code) {
  for (int attempt = 0;; ++attempt) {
    kube::Object p = c.get(kube::resources::kPods, ns, pod);
    auto& st = p["status"];
    st["phase"] = phase;
    if (!reason.empty()) st["reason"] = reason;
    if (!message.empty()) st["message"] = message;
    const std::string now = kube::format_time(std::chrono::system_clock::now());
    const bool ready = phase == "Running";
    st["conditions"] = kube::Object::array(
        {{{"type", "Ready"}, {"status", ready ? "True" : "False"}, {"lastTransitionTime", now}},
         {{"type", "PodScheduled"}, {"status", "True"}, {"lastTransitionTime", now}}});
    kube::Object cs = kube::Object::array();
    for (const auto& ctr : p["spec"]["containers"]) {
      kube::Object s = {{"name", ctr["name"]}, {"image", ctr["image"]}, {"imageID", ""},
                        {"ready", ready}, {"restartCount", 0}};
      if (phase == "Running") {
        s["state"] = {{"running", {{"startedAt", now}}}};
      } else if (phase == "Failed" || phase == "Succeeded") {
        s["state"] = {{"terminated", {{"exitCode", exit_code}, {"reason", phase == "Failed" ? "Error" : "Completed"},
                                      {"startedAt", now}, {"finishedAt", now}}}};
      } else {
        s["state"] = {{"waiting", {{"reason", "ContainerCreating"}}}};
      }
      cs.push_back(s);
    }
    st["containerStatuses"] = cs;
    if (!st.contains("startTime")) st["startTime"] = now;
    try {
      c.update_status(kube::resources::kPods, ns, p);
      return;
    } catch (const kube::ApiError& e) {
      if (!kube::is_conflict(e) || attempt > 20) throw;
    }
  }
}

std::string set_launcher_phase(kube::Client& c, const std::string& ns, const std::string& job,
                               const std::string& phase, int exit_code) {
  std::string name;
  wait_for([&] {
    for (const auto& p : launcher_pods(c, ns, job)) {
      const std::string ph = p["status"].value("phase", "Pending");
      if (ph != "Failed" && ph != "Succeeded" && !kube::has_deletion_timestamp(p)) {
        name = kube::name_of(p);
        return true;
      }
    }
    return false;
  }, std::chrono::seconds(60));
  if (name.empty()) throw std::runtime_error("no active launcher pod for " + job);
  set_pod_phase(c, ns, name, phase, "", "", exit_code);
  return name;
}

void set_all_workers(kube::Client& c, const std::string& ns, const std::string& job,
                     const std::string& phase) {
  for (const auto& p : worker_pods(c, ns, job)) set_pod_phase(c, ns, kube::name_of(p), phase);
}

bool wait_for(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  return kube::testing::eventually(pred, timeout);
}

}  // namespace optest
