// korovod-operator benchmarks against a real control plane (bench/operator/run-operator-bench
// starts one). Prints one JSON object per measurement.
//
//   operator_bench fanout --operator BIN [--workers 256] [--concurrency 16] [--qps 50 --burst 100]
//     time from creating one MPIJob until all its worker pods exist, against the floor: the
//     same pods created directly by a client loop with the same concurrency and rate limit.
//   operator_bench scale --operator BIN [--jobs 500] [--workers 4] [--idle 60]
//     time until every MPIJob is reconciled, the operator's peak RSS, and its API requests per
//     second once idle (its own mpi_operator_api_requests_total, and apiserver_request_total).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kube/config.h"
#include "kube/object_meta.h"
#include "kube/rest_client.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
const kube::Resource kMPIJobs{"kubeflow.org", "v2beta1", "mpijobs", "MPIJob", true};

double secs(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

std::map<std::string, std::string> parse_args(int argc, char** argv) {
  std::map<std::string, std::string> a;
  for (int i = 2; i + 1 < argc; i += 2) a[std::string(argv[i]).substr(2)] = argv[i + 1];
  return a;
}

std::string arg(const std::map<std::string, std::string>& a, const std::string& k,
                const std::string& def) {
  auto it = a.find(k);
  return it == a.end() ? def : it->second;
}

std::unique_ptr<kube::RestClient> client(double qps, int burst) {
  kube::RestClientOptions o;
  o.qps = qps;
  o.burst = burst;
  o.user_agent = "operator-bench";
  return std::make_unique<kube::RestClient>(
      kube::load_config("", kube::ConfigEnvironment::process()), o);
}

std::string make_namespace(kube::Client& c, const std::string& prefix) {
  std::mt19937 rng(std::random_device{}());
  const std::string ns = prefix + "-" + std::to_string(rng() % 100000);
  c.create(kube::resources::kNamespaces, "", {{"metadata", {{"name", ns}}}});
  return ns;
}

std::string http_get(int port, const std::string& path) {
  std::string out;
  const std::string cmd = "curl -s http://127.0.0.1:" + std::to_string(port) + path;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[8192];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

class Operator {
 public:
  Operator(const std::string& bin, std::vector<std::string> args, const std::string& log) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd, 1);
    posix_spawn_file_actions_adddup2(&fa, fd, 2);
    args.insert(args.begin(), bin);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, bin.c_str(), &fa, nullptr, argv.data(), environ) != 0) {
      throw std::runtime_error("cannot start " + bin);
    }
    posix_spawn_file_actions_destroy(&fa);
    ::close(fd);
  }
  ~Operator() {
    ::kill(pid_, SIGTERM);
    int st;
    ::waitpid(pid_, &st, 0);
  }
  long rss_kib(const char* field = "VmRSS:") const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind(field, 0) == 0) return std::stol(line.substr(std::strlen(field)));
    }
    return 0;
  }

 private:
  pid_t pid_ = -1;
};

void wait_ready(int health_port) {
  const auto deadline = Clock::now() + 60s;
  while (Clock::now() < deadline) {
    if (http_get(health_port, "/readyz").find("ok") != std::string::npos) return;
    std::this_thread::sleep_for(100ms);
  }
  throw std::runtime_error("operator not ready in 60s");
}

int free_port() {
  static int next = 20000 + static_cast<int>(getpid() % 20000);
  return next++;
}

kube::Object worker_pod(const std::string& name) {
  return {{"apiVersion", "v1"}, {"kind", "Pod"},
          {"metadata", {{"name", name}, {"labels", {{"bench", "floor"}}}}},
          {"spec", {{"schedulerName", "none"},
                    {"containers", {{{"name", "w"}, {"image", "mpioperator/mpi-pi:openmpi"}}}}}}};
}

kube::Object mpijob(const std::string& name, int workers) {
  auto tmpl = [](const char* n) {
    return kube::Object{{"spec", {{"schedulerName", "none"},
                                  {"containers", {{{"name", n}, {"image", "mpioperator/mpi-pi:openmpi"}}}}}}};
  };
  return {{"apiVersion", "kubeflow.org/v2beta1"}, {"kind", "MPIJob"},
          {"metadata", {{"name", name}}},
          {"spec", {{"slotsPerWorker", 1},
                    {"mpiReplicaSpecs",
                     {{"Launcher", {{"replicas", 1}, {"template", tmpl("launcher")}}},
                      {"Worker", {{"replicas", workers}, {"template", tmpl("worker")}}}}}}}};
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

size_t count_pods(kube::Client& c, const std::string& ns, const std::string& selector) {
  kube::ListOptions o;
  o.label_selector = selector;
  return c.list(kube::resources::kPods, ns, o).items.size();
}

int fanout(const std::map<std::string, std::string>& a) {
  const std::string bin = arg(a, "operator", "");
  const int workers = std::stoi(arg(a, "workers", "256"));
  const int conc = std::stoi(arg(a, "concurrency", "16"));
  const double qps = std::stod(arg(a, "qps", "50"));
  const int burst = std::stoi(arg(a, "burst", "100"));
  auto admin = client(100000, 100000);
  const std::string ns = make_namespace(*admin, "bench-fanout");

  // Floor: the same pods from a client with the operator's rate limit and concurrency.
  auto floor_client = client(qps, burst);
  const auto f0 = Clock::now();
  parallel(workers, conc, [&](int i) {
    floor_client->create(kube::resources::kPods, ns, worker_pod("floor-worker-" + std::to_string(i)));
  });
  const double floor_s = secs(Clock::now() - f0);
  parallel(workers, conc, [&](int i) {
    admin->remove(kube::resources::kPods, ns, "floor-worker-" + std::to_string(i), {});
  });

  const int health = free_port();
  Operator op(bin, {"--namespace=" + ns, "--leader-elect=false",
                    "--health-port=" + std::to_string(health),
                    "--kube-api-qps=" + arg(a, "qps", "50"), "--kube-api-burst=" + arg(a, "burst", "100"),
                    "--worker-create-concurrency=" + std::to_string(conc), "--log-level=warning"},
              "/tmp/operator-bench-fanout.log");
  wait_ready(health);
  kube::ListOptions wo;
  wo.label_selector = "training.kubeflow.org/job-name=fan,training.kubeflow.org/job-role=worker";
  auto rv = admin->list(kube::resources::kPods, ns, wo).resource_version;
  wo.resource_version = rv;
  auto stream = admin->watch(kube::resources::kPods, ns, wo);
  const auto t0 = Clock::now();
  admin->create(kMPIJobs, ns, mpijob("fan", workers));
  std::set<std::string> seen;
  while (static_cast<int>(seen.size()) < workers && Clock::now() - t0 < 300s) {
    auto ev = stream->next(1000ms);
    if (ev && ev->type == kube::WatchEvent::Type::Added) seen.insert(kube::name_of(ev->object));
    if (stream->ended()) break;
  }
  const double op_s = secs(Clock::now() - t0);
  const bool complete = static_cast<int>(seen.size()) == workers ||
                        count_pods(*admin, ns, wo.label_selector) == static_cast<size_t>(workers);
  std::cout << nlohmann::json{{"bench", "fanout"}, {"workers", workers}, {"concurrency", conc},
                              {"qps", qps}, {"burst", burst}, {"floor_s", floor_s},
                              {"operator_s", op_s}, {"ratio", op_s / floor_s},
                              {"complete", complete}}.dump()
            << std::endl;
  admin->remove(kube::resources::kNamespaces, "", ns, {});
  return complete ? 0 : 1;
}

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

int scale(const std::map<std::string, std::string>& a) {
  const std::string bin = arg(a, "operator", "");
  const int jobs = std::stoi(arg(a, "jobs", "500"));
  const int workers = std::stoi(arg(a, "workers", "4"));
  const int idle = std::stoi(arg(a, "idle", "60"));
  auto admin = client(100000, 100000);
  const std::string ns = make_namespace(*admin, "bench-scale");
  const int health = free_port(), mon = free_port();
  Operator op(bin, {"--namespace=" + ns, "--leader-elect=false",
                    "--health-port=" + std::to_string(health),
                    "--monitoring-port=" + std::to_string(mon), "--log-level=warning"},
              "/tmp/operator-bench-scale.log");
  wait_ready(health);
  const long rss_idle_start = op.rss_kib();
  std::atomic<bool> sampling{true};
  std::atomic<long> peak{0};
  std::thread sampler([&] {
    while (sampling) {
      peak = std::max(peak.load(), op.rss_kib());
      std::this_thread::sleep_for(100ms);
    }
  });
  const auto t0 = Clock::now();
  parallel(jobs, 32, [&](int i) { admin->create(kMPIJobs, ns, mpijob("j" + std::to_string(i), workers)); });
  const double create_s = secs(Clock::now() - t0);
  double done_s = -1;
  while (Clock::now() - t0 < 600s) {
    const size_t pods = count_pods(*admin, ns, "training.kubeflow.org/job-role=worker");
    const size_t launchers = admin->list(kube::resources::kJobs, ns, {}).items.size();
    size_t created = 0;
    if (pods == static_cast<size_t>(jobs * workers) && launchers == static_cast<size_t>(jobs)) {
      for (const auto& j : admin->list(kMPIJobs, ns, {}).items) {
        created += j.contains("status") && j["status"].contains("conditions") ? 1 : 0;
      }
    }
    if (created == static_cast<size_t>(jobs)) {
      done_s = secs(Clock::now() - t0);
      break;
    }
    std::this_thread::sleep_for(250ms);
  }
  // Settle (launcher pods, events), then measure an idle window.
  std::this_thread::sleep_for(15s);
  const std::string m0 = http_get(mon, "/metrics");
  const std::string a0 = admin->raw_get("/metrics").get<std::string>();
  std::this_thread::sleep_for(std::chrono::seconds(idle));
  const std::string m1 = http_get(mon, "/metrics");
  const std::string a1 = admin->raw_get("/metrics").get<std::string>();
  sampling = false;
  sampler.join();
  const double op_reqs = scrape_sum(m1, "mpi_operator_api_requests_total") -
                         scrape_sum(m0, "mpi_operator_api_requests_total");
  const double all_reqs = scrape_sum(a1, "apiserver_request_total") -
                          scrape_sum(a0, "apiserver_request_total");
  std::cout << nlohmann::json{{"bench", "scale"}, {"jobs", jobs}, {"workers", workers},
                              {"create_s", create_s}, {"reconciled_s", done_s},
                              {"rss_start_mib", rss_idle_start / 1024.0},
                              {"rss_peak_mib", std::max(peak.load(), op.rss_kib("VmHWM:")) / 1024.0},
                              {"rss_end_mib", op.rss_kib() / 1024.0},
                              {"idle_window_s", idle},
                              {"operator_idle_requests", op_reqs},
                              {"operator_idle_rps", op_reqs / idle},
                              {"apiserver_idle_rps_all_clients", all_reqs / idle}}.dump()
            << std::endl;
  admin->remove(kube::resources::kNamespaces, "", ns, {});
  return done_s >= 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: operator_bench fanout|scale --operator BIN [options]\n";
    return 2;
  }
  const std::string mode = argv[1];
  try {
    if (mode == "fanout") return fanout(parse_args(argc, argv));
    if (mode == "scale") return scale(parse_args(argc, argv));
  } catch (const std::exception& e) {
    std::cerr << "operator_bench: " << e.what() << "\n";
    return 1;
  }
  std::cerr << "unknown mode " << mode << "\n";
  return 2;
}
