// rt_elastic_chaos's job: the workers (this binary again, as `--worker`, elastic_worker.h), the
// rendezvous store the driver hosts for them, and what the driver reads back (their logs, exit
// statuses, /dev/shm). Used by elastic_chaos_main.cc only.
#pragma once

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "transport/tcp/auth.h"
#include "transport/tcp/store.h"

namespace korovod::chaos {

using tcp::StoreClient;
using tcp::StoreServer;

inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Worker {
  std::string id;
  pid_t pid = -1;
  std::string log;
  int status = -1;  // waitpid status once exited
};

class Job {
 public:
  Job(std::string transport, std::vector<std::string> worker_args, double collective_timeout = 20)
      : transport_(std::move(transport)), worker_args_(std::move(worker_args)), collective_timeout_(collective_timeout) {
    secret_ = tcp::JobSecret::generate();
    Result<std::unique_ptr<StoreServer>> s = StoreServer::start("127.0.0.1", 0, secret_);
    check(s.status());
    server_ = std::move(s).value();
    Result<std::unique_ptr<StoreClient>> c = StoreClient::connect({"127.0.0.1", server_->port()}, 10, "driver", secret_);
    check(c.status());
    store_ = std::move(c).value();
  }
  ~Job() {
    for (Worker& w : workers_) {
      if (w.status < 0 && w.pid > 0) {
        kill(w.pid, SIGKILL);
        waitpid(w.pid, nullptr, 0);
      }
      unlink(w.log.c_str());
    }
  }

  std::vector<Worker>& workers() { return workers_; }

  void start(int n) {
    for (int i = 0; i < n; ++i) {
      Worker w;
      w.id = fmt::format("localhost:{}", i);
      w.log = fmt::format("/tmp/korovod-elastic-chaos-{}-{}.log", getpid(), i);
      w.pid = fork();
      if (w.pid == 0) exec_worker(w);
      workers_.push_back(w);
    }
  }

  // assignments[id] = "rank size local_rank local_size cross_rank cross_size" or "removed".
  void publish(int round, const std::map<std::string, std::string>& assignments) {
    for (const auto& [id, text] : assignments) check(store_->set(fmt::format("elastic/{}/assign/{}", round, id), text));
    check(store_->set("elastic/round", std::to_string(round)));
  }

  // Every worker of `ids` marked round `round` ready, within `seconds`.
  bool wait_ready(int round, const std::vector<std::string>& ids, double seconds) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    for (const std::string& id : ids) {
      for (;;) {
        Result<std::optional<std::string>> v = store_->try_get(fmt::format("elastic/{}/ready/{}", round, id));
        if (v.is_ok() && v->has_value()) break;
        if (std::chrono::steady_clock::now() > until || any_exited(ids)) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
    return true;
  }

  // A member of `ids` has exited (a worker removed from the round may exit meanwhile).
  bool any_exited(const std::vector<std::string>& ids) {
    for (Worker& w : workers_) {
      if (std::find(ids.begin(), ids.end(), w.id) == ids.end()) continue;
      int st = 0;
      if (w.status < 0 && waitpid(w.pid, &st, WNOHANG) == w.pid) w.status = st;
      if (w.status >= 0) return true;
    }
    return false;
  }

  // A stopped worker never exits by itself: the others first, then it is killed.
  bool wait_all_but(int stopped, double seconds) {
    Worker held = workers_[stopped];
    workers_[stopped].status = 0;  // not waited for
    const bool ok = wait_all(seconds);
    kill(held.pid, SIGKILL);
    waitpid(held.pid, &workers_[stopped].status, 0);
    return ok;
  }

  // Waits for every worker to exit, at most `seconds`; false (and the stragglers killed) after.
  bool wait_all(double seconds) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    bool ok = true;
    for (Worker& w : workers_) {
      while (w.status < 0) {
        int st = 0;
        if (waitpid(w.pid, &st, WNOHANG) == w.pid) {
          w.status = st;
        } else if (std::chrono::steady_clock::now() > until) {
          fmt::print("HANG: worker {} (pid {}) still running\n", w.id, w.pid);
          kill(w.pid, SIGKILL);
          waitpid(w.pid, &st, 0);
          w.status = st;
          ok = false;
        } else {
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
      }
    }
    return ok;
  }

  static std::string read_log(const Worker& w) {
    std::ifstream in(w.log);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

 private:
  // The driver's own store calls fail only when the test machine is broken: stop the test.
  static void check(const Status& s) {
    if (s.is_ok()) return;
    fmt::print("DRIVER-FAILED: {}\n", s.to_string());
    std::exit(1);
  }

  [[noreturn]] void exec_worker(const Worker& w) {
    FILE* out = std::fopen(w.log.c_str(), "w");
    if (out) {
      dup2(fileno(out), STDOUT_FILENO);
      dup2(fileno(out), STDERR_FILENO);
    }
    setenv("KOROVOD_ELASTIC", "1", 1);
    setenv("KOROVOD_ELASTIC_WORKER_ID", w.id.c_str(), 1);
    setenv("KOROVOD_HOSTNAME", "chaos-host", 1);
    setenv("KOROVOD_RENDEZVOUS_ADDR", "127.0.0.1", 1);
    setenv("KOROVOD_RENDEZVOUS_PORT", std::to_string(server_->port()).c_str(), 1);
    setenv("KOROVOD_JOB_SECRET", secret_.text().c_str(), 1);
    setenv("KOROVOD_ELASTIC_TIMEOUT", "60", 1);
    setenv("KOROVOD_START_TIMEOUT", "30", 1);
    setenv("KOROVOD_COLLECTIVE_TIMEOUT_SECONDS", fmt::format("{}", collective_timeout_).c_str(), 1);
    setenv("KOROVOD_CPU_OPERATIONS", transport_ == "tcp" ? "tcp" : "shm", 1);
    if (!getenv("KOROVOD_LOG_LEVEL")) setenv("KOROVOD_LOG_LEVEL", "error", 1);
    std::vector<std::string> args = {"/proc/self/exe", "--worker"};
    args.insert(args.end(), worker_args_.begin(), worker_args_.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv("/proc/self/exe", argv.data());
    _exit(127);
  }

  std::string transport_;
  std::vector<std::string> worker_args_;
  double collective_timeout_;
  tcp::JobSecret secret_;
  std::unique_ptr<StoreServer> server_;
  std::unique_ptr<StoreClient> store_;
  std::vector<Worker> workers_;
};

// One host: local ranks are the ranks.
inline std::string one_host(int rank, int size) { return fmt::format("{} {} {} {} 0 1", rank, size, rank, size); }

inline bool exited_ok(const Worker& w) { return WIFEXITED(w.status) && WEXITSTATUS(w.status) == 0; }

inline std::vector<std::string> leftover_segments(const std::vector<Worker>& workers) {
  std::vector<std::string> left;
  for (const Worker& w : workers) {
    const std::string prefix = fmt::format("korovod-{}-", w.pid);
    for (const auto& e : std::filesystem::directory_iterator("/dev/shm")) {
      const std::string name = e.path().filename().string();
      if (name.rfind(prefix, 0) == 0) left.push_back(name);
    }
  }
  return left;
}

}  // namespace korovod::chaos
