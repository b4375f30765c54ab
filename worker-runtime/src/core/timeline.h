// Horovod's timeline: a Chrome trace JSON array in which every tensor is a "process". Records
// are buffered during a cycle and appended at flush(); the file on disk is valid JSON after
// every flush (it always ends in "]"; the next flush seeks back over it). Rank 0 only.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/mutex.h"
#include "core/thread_annotations.h"
#include "korovod/env.h"
#include "korovod/status.h"
#include "korovod/types.h"

namespace korovod {

class Timeline {
 public:
  // `env`: the clock records are stamped with and where the file is written.
  explicit Timeline(Env& env) : env_(env) {}
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  Status start(const std::string& path, bool mark_cycles);
  void stop();
  bool active() const;

  void negotiate_start(const std::string& name, RequestType type);
  void negotiate_rank_ready(const std::string& name, int rank);
  void negotiate_end(const std::string& name);
  void op_start(const std::string& name, ResponseType type);
  void activity_start(const std::string& name, const std::string& activity);
  void activity_end(const std::string& name);
  void op_end(const std::string& name, DataType dtype, const std::vector<int64_t>& shape);
  void mark_cycle();
  void flush();

 private:
  void record(const std::string& name, char phase, const std::string& op_name,
              const std::string& args = "") KOROVOD_REQUIRES(mu_);
  int64_t ts() const KOROVOD_REQUIRES(mu_);
  void write_pending() KOROVOD_REQUIRES(mu_);
  void close_file() KOROVOD_REQUIRES(mu_);

  Env& env_;
  // file_ != nullptr, readable without the lock: every record call of an engine without a
  // timeline (the usual case) returns before taking mu_. Set and cleared under mu_.
  std::atomic<bool> on_{false};
  mutable Mutex mu_;  // guards everything below (user thread starts/stops, engine writes)
  std::unique_ptr<WritableFile> file_ KOROVOD_GUARDED_BY(mu_);
  bool mark_cycles_ KOROVOD_GUARDED_BY(mu_) = false;
  Clock::TimePoint start_time_ KOROVOD_GUARDED_BY(mu_);
  std::unordered_map<std::string, int> pid_of_ KOROVOD_GUARDED_BY(mu_);
  std::vector<std::string> pending_ KOROVOD_GUARDED_BY(mu_);
};

std::string json_escape(const std::string& s);

}  // namespace korovod
