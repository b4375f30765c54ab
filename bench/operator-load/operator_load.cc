// operator_load: N MPIJobs x W workers through a running korovod-operator against a real API
// server, until every job has converged. Started by bench/operator-load/run (see --help).
//
// Converged (no kubelet runs in the test control plane, so no pod ever starts): the MPIJob's
// status has condition Created=True, its W worker pods exist and its launcher Job exists,
// all three seen through watches. Measured: time to create the jobs, time until all converged
// (and each job's own create -> converged latency), the operator's peak RSS (VmRSS sampled
// every 100 ms, and VmHWM), and requests per second: the operator's own count
// (mpi_operator_api_requests_total on its /metrics) and the API server's count from all
// clients (apiserver_request_total), both over the window from the first create until all
// converged. Progress goes to stderr every 5 s; one JSON line with the results to stdout.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kube/config.h"
#include "kube/informer.h"
#include "kube/object_meta.h"
#include "kube/rest_client.h"

extern char** environ;

namespace {

using SteadyClock = std::chrono::steady_clock;
using namespace std::chrono_literals;
const kube::Resource kMPIJobs{"kubeflow.org", "v2beta1", "mpijobs", "MPIJob", true};
const char* kJobNameLabel = "training.kubeflow.org/job-name";
const char* kRoleLabel = "training.kubeflow.org/job-role";

constexpr const char* kUsage = R"(usage: operator_load --operator BIN [options]
  --operator BIN          the korovod-operator binary (started here, watching a fresh namespace)
  --jobs N                MPIJobs to create (default 1000)
  --workers W             workers per MPIJob (default 4)
  --create-concurrency C  MPIJob creates in flight (default 32)
  --timeout S             give up when not all converged after S seconds (default 3600)
  --operator-arg ARG      extra operator flag, repeatable (e.g. --operator-arg=--kube-api-qps=200)
  --keep                  leave the namespace (and its objects) behind
KUBECONFIG names the cluster. Exit status 0 only when every job converged.
)";

double secs(SteadyClock::duration d) { return std::chrono::duration<double>(d).count(); }

struct Args {
  std::string op_bin;
  int jobs = 1000, workers = 4, concurrency = 32, timeout_s = 3600;
  std::vector<std::string> op_args;
  bool keep = false;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i], v;
    if (k == "-h" || k == "--help") {
      std::cout << kUsage;
      std::exit(0);
    }
    if (k == "--keep") {
      a.keep = true;
      continue;
    }
    if (auto eq = k.find('='); eq != std::string::npos) {
      v = k.substr(eq + 1);
      k = k.substr(0, eq);
    } else if (i + 1 < argc) {
      v = argv[++i];
    } else {
      throw std::invalid_argument(k + " needs a value (see --help)");
    }
    if (k == "--operator") a.op_bin = v;
    else if (k == "--jobs") a.jobs = std::stoi(v);
    else if (k == "--workers") a.workers = std::stoi(v);
    else if (k == "--create-concurrency") a.concurrency = std::stoi(v);
    else if (k == "--timeout") a.timeout_s = std::stoi(v);
    else if (k == "--operator-arg") a.op_args.push_back(v);
    else throw std::invalid_argument("unknown option " + k + " (see --help)");
  }
  if (a.op_bin.empty()) throw std::invalid_argument("--operator BIN is required (see --help)");
  return a;
}

std::unique_ptr<kube::RestClient> make_client() {
  kube::RestClientOptions o;
  o.qps = 100000;  // the bench itself must not be the bottleneck
  o.burst = 100000;
  o.user_agent = "operator-load";
  return std::make_unique<kube::RestClient>(
      kube::load_config("", kube::ConfigEnvironment::process()), o);
}

std::string http_get(int port, const std::string& path) {
  std::string out;
  const std::string cmd = "curl -s --max-time 10 http://127.0.0.1:" + std::to_string(port) + path;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[8192];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

// Sum of every sample of `metric` in a Prometheus text page.
double scrape_sum(const std::string& text, const std::string& metric) {
  double sum = 0;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(metric, 0) != 0) continue;
    const char next = line.size() > metric.size() ? line[metric.size()] : ' ';
    if (next != '{' && next != ' ') continue;
    sum += std::stod(line.substr(line.rfind(' ') + 1));
  }
  return sum;
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

class OperatorProcess {
 public:
  OperatorProcess(const std::string& bin, std::vector<std::string> args, const std::string& log) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) throw std::runtime_error("cannot open " + log);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd, 1);
    posix_spawn_file_actions_adddup2(&fa, fd, 2);
    args.insert(args.begin(), bin);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int rc = posix_spawn(&pid_, bin.c_str(), &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    ::close(fd);
    if (rc != 0) throw std::runtime_error("cannot start " + bin);
  }
  ~OperatorProcess() {
    ::kill(pid_, SIGTERM);
    int st;
    ::waitpid(pid_, &st, 0);
  }
  long status_kib(const char* field) const {  // VmRSS: / VmHWM: from /proc/PID/status
    std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind(field, 0) == 0) return std::stol(line.substr(std::strlen(field)));
    }
    return 0;
  }
  bool running() const { return ::waitpid(pid_, nullptr, WNOHANG) == 0; }

 private:
  pid_t pid_ = -1;
};

kube::Object mpijob(const std::string& name, int workers) {
  auto tmpl = [](const char* n) {
    return kube::Object{{"spec", {{"containers", {{{"name", n}, {"image", "mpioperator/mpi-pi:openmpi"}}}}}}};
  };
  return {{"apiVersion", "kubeflow.org/v2beta1"}, {"kind", "MPIJob"},
          {"metadata", {{"name", name}}},
          {"spec", {{"slotsPerWorker", 1},
                    {"mpiReplicaSpecs",
                     {{"Launcher", {{"replicas", 1}, {"template", tmpl("launcher")}}},
                      {"Worker", {{"replicas", workers}, {"template", tmpl("worker")}}}}}}}};
}

// What the watches have shown of each job, and when it converged.
class Progress {
 public:
  Progress(int jobs, int workers) : workers_(workers), state_(jobs) {}
  void created(int i) {
    std::lock_guard l(mu_);
    state_[i].created_at = SteadyClock::now();
    ++created_;
  }
  void worker_pod(const kube::Object& pod) {
    const int i = index_of(label(pod, kJobNameLabel));
    if (i < 0 || label(pod, kRoleLabel) != "worker") return;
    std::lock_guard l(mu_);
    state_[i].workers.insert(kube::name_of(pod));
    check(i);
  }
  void launcher_job(const kube::Object& job) {
    for (const auto& ref : job["metadata"].value("ownerReferences", kube::Object::array())) {
      if (ref.value("kind", "") != "MPIJob") continue;
      const int i = index_of(ref.value("name", ""));
      if (i < 0) continue;
      std::lock_guard l(mu_);
      state_[i].launcher = true;
      check(i);
    }
  }
  void mpijob(const kube::Object& job) {
    const int i = index_of(kube::name_of(job));
    if (i < 0) return;
    bool created = false;
    if (job.contains("status")) {
      for (const auto& c : job["status"].value("conditions", kube::Object::array())) {
        created = created || (c.value("type", "") == "Created" && c.value("status", "") == "True");
      }
    }
    std::lock_guard l(mu_);
    state_[i].status_created = state_[i].status_created || created;
    check(i);
  }
  int created() const { std::lock_guard l(mu_); return created_; }
  int converged() const { std::lock_guard l(mu_); return static_cast<int>(latencies_.size()); }
  std::vector<double> latencies() const { std::lock_guard l(mu_); return latencies_; }
  SteadyClock::time_point last_converged() const { std::lock_guard l(mu_); return last_; }

 private:
  struct Job {
    SteadyClock::time_point created_at{};
    std::set<std::string> workers;
    bool launcher = false, status_created = false, done = false;
  };
  static std::string label(const kube::Object& o, const char* key) {
    const auto& labels = o["metadata"].value("labels", kube::Object::object());
    return labels.value(key, "");
  }
  int index_of(const std::string& name) const {  // "j<i>"
    if (name.size() < 2 || name[0] != 'j') return -1;
    const int i = std::atoi(name.c_str() + 1);
    return i >= 0 && i < static_cast<int>(state_.size()) ? i : -1;
  }
  void check(int i) {  // REQUIRES(mu_)
    Job& j = state_[i];
    if (j.done || !j.launcher || !j.status_created ||
        static_cast<int>(j.workers.size()) < workers_ || j.created_at == SteadyClock::time_point{}) {
      return;
    }
    j.done = true;
    last_ = SteadyClock::now();
    latencies_.push_back(secs(last_ - j.created_at));
  }
  const int workers_;
  mutable std::mutex mu_;
  std::vector<Job> state_;          // GUARDED_BY(mu_)
  int created_ = 0;                 // GUARDED_BY(mu_)
  std::vector<double> latencies_;   // GUARDED_BY(mu_)
  SteadyClock::time_point last_{};  // GUARDED_BY(mu_)
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))];
}

void parallel(int n, int threads, const std::function<void(int)>& fn) {
  std::atomic<int> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (int i = next++; i < n; i = next++) fn(i);
    });
  }
  for (auto& t : pool) t.join();
}

int run(const Args& a) {
  auto admin = make_client();
  kube::RealClock clock;
  std::mt19937 rng(std::random_device{}());
  const std::string ns = "operator-load-" + std::to_string(rng() % 100000);
  admin->create(kube::resources::kNamespaces, "", {{"metadata", {{"name", ns}}}});
  std::cerr << "operator_load: namespace " << ns << ", " << a.jobs << " MPIJobs x " << a.workers
            << " workers\n";

  Progress progress(a.jobs, a.workers);
  std::vector<std::unique_ptr<kube::Informer>> informers;
  auto informer = [&](const kube::Resource& r, auto on_object) {
    kube::InformerOptions io;
    io.watcher.ns = ns;
    auto inf = std::make_unique<kube::Informer>(*admin, r, io, clock);
    inf->on_add([on_object](const kube::ObjectEvent& e) { on_object(e.object()); });
    inf->on_update(
        [on_object](const kube::ObjectEvent&, const kube::ObjectEvent& e) { on_object(e.object()); });
    inf->start();
    informers.push_back(std::move(inf));
  };
  informer(kube::resources::kPods, [&](const kube::Object& o) { progress.worker_pod(o); });
  informer(kube::resources::kJobs, [&](const kube::Object& o) { progress.launcher_job(o); });
  informer(kMPIJobs, [&](const kube::Object& o) { progress.mpijob(o); });
  for (auto& inf : informers) {
    if (!inf->wait_for_sync(60s)) throw std::runtime_error("the bench's watches did not sync");
  }

  const int health = free_port(), mon = free_port();
  std::vector<std::string> op_args = {"--namespace=" + ns, "--leader-elect=false",
                                      "--health-port=" + std::to_string(health),
                                      "--monitoring-port=" + std::to_string(mon),
                                      "--log-level=warning"};
  op_args.insert(op_args.end(), a.op_args.begin(), a.op_args.end());
  const std::string log = "/tmp/operator-load-" + ns + ".log";
  OperatorProcess op(a.op_bin, op_args, log);
  for (auto until = SteadyClock::now() + 60s;
       http_get(health, "/readyz").find("ok") == std::string::npos;) {
    if (SteadyClock::now() > until || !op.running()) {
      throw std::runtime_error("the operator did not become ready in 60 s; its log: " + log);
    }
    std::this_thread::sleep_for(100ms);
  }
  const long rss_start = op.status_kib("VmRSS:");
  std::atomic<bool> sampling{true};
  std::atomic<long> rss_peak{rss_start};
  std::thread sampler([&] {
    while (sampling) {
      rss_peak = std::max(rss_peak.load(), op.status_kib("VmRSS:"));
      std::this_thread::sleep_for(100ms);
    }
  });

  const double op_req0 = scrape_sum(http_get(mon, "/metrics"), "mpi_operator_api_requests_total");
  const double api_req0 = scrape_sum(admin->raw_get("/metrics").get<std::string>(),
                                     "apiserver_request_total");
  const auto t0 = SteadyClock::now();
  std::atomic<double> create_s{-1};
  std::atomic<int> create_errors{0};
  std::thread creator([&] {
    parallel(a.jobs, a.concurrency, [&](int i) {
      for (int attempt = 0;; ++attempt) {
        try {
          admin->create(kMPIJobs, ns, mpijob("j" + std::to_string(i), a.workers));
          progress.created(i);
          return;
        } catch (const std::exception& e) {
          // 429 / timeouts when the API server is saturated: try again, and count it.
          ++create_errors;
          if (attempt == 20) throw;
          std::this_thread::sleep_for(std::chrono::milliseconds(200 * (attempt + 1)));
        }
      }
    });
    create_s = secs(SteadyClock::now() - t0);
  });
  auto next_report = t0 + 5s;
  bool all = false, timed_out = false;
  while (!all && op.running()) {
    std::this_thread::sleep_for(200ms);
    all = progress.converged() == a.jobs;
    if (SteadyClock::now() >= next_report || all) {
      const double t = secs(SteadyClock::now() - t0);
      const double op_req = scrape_sum(http_get(mon, "/metrics"), "mpi_operator_api_requests_total");
      std::cerr << "t=" << static_cast<int>(t) << "s created " << progress.created() << "/"
                << a.jobs << ", converged " << progress.converged() << "/" << a.jobs
                << ", operator RSS " << op.status_kib("VmRSS:") / 1024 << " MiB, operator requests "
                << static_cast<long>(op_req - op_req0) << " (" << static_cast<int>((op_req - op_req0) / t)
                << "/s)\n";
      next_report += 5s;
    }
    if (SteadyClock::now() - t0 > std::chrono::seconds(a.timeout_s)) {
      timed_out = true;
      break;
    }
  }
  creator.join();
  const double converge_s = secs(progress.last_converged() - t0);
  const double op_req1 = scrape_sum(http_get(mon, "/metrics"), "mpi_operator_api_requests_total");
  const double api_req1 = scrape_sum(admin->raw_get("/metrics").get<std::string>(),
                                     "apiserver_request_total");
  const double window = secs(SteadyClock::now() - t0);
  sampling = false;
  sampler.join();
  const auto lat = progress.latencies();
  const nlohmann::json result = {
      {"bench", "operator-load"}, {"jobs", a.jobs}, {"workers", a.workers},
      {"operator_args", a.op_args}, {"converged", progress.converged()},
      {"timed_out", timed_out}, {"operator_running", op.running()},
      {"create_s", create_s.load()}, {"create_retries", create_errors.load()},
      {"all_converged_s", all ? converge_s : -1},
      {"job_converge_s_p50", percentile(lat, 0.5)}, {"job_converge_s_p95", percentile(lat, 0.95)},
      {"job_converge_s_max", percentile(lat, 1.0)},
      {"rss_start_mib", rss_start / 1024.0},
      {"rss_peak_mib", std::max(rss_peak.load(), op.status_kib("VmHWM:")) / 1024.0},
      {"rss_end_mib", op.status_kib("VmRSS:") / 1024.0},
      {"window_s", window},
      {"operator_requests", op_req1 - op_req0},
      {"operator_rps", (op_req1 - op_req0) / window},
      {"apiserver_requests_all_clients", api_req1 - api_req0},
      {"apiserver_rps_all_clients", (api_req1 - api_req0) / window},
      {"operator_log", log}};
  std::cout << result.dump() << std::endl;
  for (auto& inf : informers) inf->stop();
  if (!a.keep) admin->remove(kube::resources::kNamespaces, "", ns, {});
  return all ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::invalid_argument& e) {
    std::cerr << "operator_load: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "operator_load: " << e.what() << "\n";
    return 1;
  }
}
