// Test double for ProcessLauncher: records every start (the Exec and its sink), never runs
// anything, and lets the test decide how each process ends. SIGTERM ends a fake process with
// 143 unless it ignores SIGTERM; SIGKILL always ends it with 137. Thread-safe: the code under
// test starts, polls and signals from its own threads while the test inspects.
#pragma once

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kube/mutex.h"
#include "local/process/process_launcher.h"

namespace local {

class FakeProcessLauncher final : public ProcessLauncher {
 public:
  // Called by start() with the Exec and the sink: may throw (the start fails), may write output
  // lines, and returns the exit code when the process ends at once (nullopt: it runs until
  // end() or a signal).
  using OnStart = std::function<std::optional<int>(const Exec&, const LineSink&)>;

  explicit FakeProcessLauncher(OnStart on_start = nullptr) : on_start_(std::move(on_start)) {}

  std::unique_ptr<LaunchedProcess> start(const Exec& exec, LineSink sink) override {
    std::optional<int> code;
    if (on_start_) code = on_start_(exec, sink);  // outside mu_: it may throw or log
    kube::MutexLock lock(mu_);
    records_.push_back({exec, std::move(sink), code, {}});
    changed_.notify_all();
    return std::make_unique<Fake>(*this, records_.size() - 1);
  }

  size_t started() const {
    kube::MutexLock lock(mu_);
    return records_.size();
  }
  Exec exec(size_t i) const {
    kube::MutexLock lock(mu_);
    return records_.at(i).exec;
  }
  std::vector<int> signals(size_t i) const {
    kube::MutexLock lock(mu_);
    return records_.at(i).signals;
  }
  // Process i writes a line, then (with a code) ends.
  void say(size_t i, const std::string& line) {
    LineSink sink;
    {
      kube::MutexLock lock(mu_);
      sink = records_.at(i).sink;
    }
    sink(line);
  }
  void end(size_t i, int code) {
    kube::MutexLock lock(mu_);
    if (!records_.at(i).exit_code) records_[i].exit_code = code;
    changed_.notify_all();
  }
  void ignore_sigterm(bool ignore) {
    kube::MutexLock lock(mu_);
    ignore_sigterm_ = ignore;
  }
  // Blocks (really, up to 5 s) until pred() holds over the launcher's records; false on timeout.
  bool wait_for(const std::function<bool()>& pred) {
    kube::MutexLock lock(mu_);
    return changed_.wait_for(lock, std::chrono::seconds(5), pred);
  }
  bool wait_for_started(size_t n) {
    return wait_for([&] { return records_.size() >= n; });
  }
  bool wait_for_signal(size_t i, int signo) {
    return wait_for([&] {
      if (i >= records_.size()) return false;
      const auto& s = records_[i].signals;
      return std::find(s.begin(), s.end(), signo) != s.end();
    });
  }

 private:
  struct Record {
    Exec exec;
    LineSink sink;
    std::optional<int> exit_code;
    std::vector<int> signals;
  };

  class Fake final : public LaunchedProcess {
   public:
    Fake(FakeProcessLauncher& owner, size_t index) : owner_(owner), index_(index) {}
    std::optional<int> poll() override {
      kube::MutexLock lock(owner_.mu_);
      return owner_.records_[index_].exit_code;
    }
    void signal(int signo) override {
      kube::MutexLock lock(owner_.mu_);
      auto& r = owner_.records_[index_];
      r.signals.push_back(signo);
      if (!r.exit_code && (signo == SIGKILL || (signo == SIGTERM && !owner_.ignore_sigterm_))) {
        r.exit_code = 128 + signo;
      }
      owner_.changed_.notify_all();
    }
    int wait() override {
      kube::MutexLock lock(owner_.mu_);
      owner_.changed_.wait(lock, [&] { return owner_.records_[index_].exit_code.has_value(); });
      return *owner_.records_[index_].exit_code;
    }

   private:
    FakeProcessLauncher& owner_;
    const size_t index_;
  };

  const OnStart on_start_;
  mutable kube::Mutex mu_;
  std::condition_variable changed_;
  std::deque<Record> records_ KOROVOD_GUARDED_BY(mu_);
  bool ignore_sigterm_ KOROVOD_GUARDED_BY(mu_) = false;
};

}  // namespace local
