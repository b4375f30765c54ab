// An Env whose time moves only when the test says (advance): timeouts are tested without
// waiting for them; its files are strings (file(path)), and paths under /unwritable fail; its
// host is the one the test names, so threads of one process pose as ranks on several hosts.
// Its waits block in real time for at most kPoll and then return as a spurious wake-up, so the
// waiting code re-checks its condition and the fake time; a test moves the time and then waits
// (in real time) for the code to react.
#pragma once

#include <atomic>
#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "korovod/env.h"

namespace korovod::testing {

class FakeEnv final : public Env {
 public:
  static constexpr auto kPoll = std::chrono::milliseconds(1);

  explicit FakeEnv(HostIdentity host = {"fake-host", "fake-boot"}) : host_(std::move(host)) {}

  TimePoint now() const override { return TimePoint(std::chrono::nanoseconds(now_ns_.load())); }
  HostIdentity host() const override { return host_; }
  // Every process is alive until the test says it is gone.
  bool process_alive(int pid) const override {
    std::lock_guard lock(gone_mu_);
    return gone_.count(pid) == 0;
  }
  void set_process_gone(int pid) {
    std::lock_guard lock(gone_mu_);
    gone_.insert(pid);
  }
  int64_t wall_micros() const override { return 1'800'000'000'000'000 + now_ns_.load() / 1000; }
  void advance(std::chrono::nanoseconds d) { now_ns_.fetch_add(d.count()); }
  // Calls of wait_until so far: a test waits for the code under test to be inside a wait (its
  // deadline taken) before it moves the time.
  int64_t wait_calls() const { return wait_calls_.load(); }

  Result<std::unique_ptr<WritableFile>> new_writable_file(const std::string& path) override {
    if (path.rfind("/unwritable", 0) == 0) return Status::invalid_argument("cannot open '" + path + "': fake");
    std::lock_guard lock(files_mu_);
    files_[path].clear();
    return std::unique_ptr<WritableFile>(new File(*this, path));
  }
  // What was written to `path` so far ("" when nothing).
  std::string file(const std::string& path) const {
    std::lock_guard lock(files_mu_);
    auto it = files_.find(path);
    return it == files_.end() ? "" : it->second;
  }
  void await_waiter(int64_t more_than = 0) const {
    while (wait_calls() <= more_than) std::this_thread::sleep_for(kPoll);
  }

  void sleep_for(std::chrono::nanoseconds d) override {
    const TimePoint until = deadline_after(d);
    while (now() < until) std::this_thread::sleep_for(kPoll);
  }
  bool wait_until(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                  TimePoint deadline) override {
    wait_calls_.fetch_add(1);
    if (now() >= deadline) return true;
    cv.wait_for(lock, kPoll);
    return now() >= deadline;
  }

 private:
  const HostIdentity host_;
  std::atomic<int64_t> now_ns_{1'000'000'000};  // 1 s past the epoch: no time point is 0
  std::atomic<int64_t> wait_calls_{0};
  mutable std::mutex gone_mu_;
  std::set<int> gone_;

  class File final : public WritableFile {
   public:
    File(FakeEnv& env, std::string path) : env_(env), path_(std::move(path)) {}
    Status append(std::string_view bytes) override {
      std::lock_guard lock(env_.files_mu_);
      std::string& f = env_.files_[path_];
      // As a real file: overwrites from the position on, and grows past the end.
      if (at_ + bytes.size() > f.size()) f.resize(at_ + bytes.size());
      f.replace(at_, bytes.size(), bytes);
      at_ += bytes.size();
      return Status::ok();
    }
    Status back_up(size_t n) override {
      std::lock_guard lock(env_.files_mu_);
      const size_t size = env_.files_[path_].size();
      if (n > size) return Status::invalid_argument("back_up past the start of " + path_);
      at_ = size - n;
      return Status::ok();
    }
    Status flush() override { return Status::ok(); }

   private:
    FakeEnv& env_;
    std::string path_;
    size_t at_ = 0;
  };
  mutable std::mutex files_mu_;
  std::map<std::string, std::string> files_;
};

// The system's time and files on a host the test names: threads of one process pose as ranks on
// several machines while the engine runs in real time (a fake time that no one moves would
// stall the cycles of a multi-rank job).
class NamedHostEnv final : public Env {
 public:
  explicit NamedHostEnv(HostIdentity host) : host_(std::move(host)) {}
  HostIdentity host() const override { return host_; }
  bool process_alive(int pid) const override { return system_.process_alive(pid); }
  TimePoint now() const override { return system_.now(); }
  int64_t wall_micros() const override { return system_.wall_micros(); }
  void sleep_for(std::chrono::nanoseconds d) override { system_.sleep_for(d); }
  bool wait_until(std::condition_variable& cv, std::unique_lock<std::mutex>& lock, TimePoint deadline) override {
    return system_.wait_until(cv, lock, deadline);
  }
  Result<std::unique_ptr<WritableFile>> new_writable_file(const std::string& path) override {
    return system_.new_writable_file(path);
  }

 private:
  const HostIdentity host_;
  SystemEnv system_;
};

}  // namespace korovod::testing
