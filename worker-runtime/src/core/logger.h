// Per-Runtime logging: level from Config, rank prefix, sink injectable for tests.
#pragma once

#include <fmt/format.h>

#include <string>

#include "korovod/config.h"
#include "korovod/runtime.h"

namespace korovod {

class Logger {
 public:
  Logger(LogLevel level, bool hide_time, LogSink sink);
  void set_rank(int rank) { rank_ = rank; }
  bool enabled(LogLevel level) const { return level >= level_; }
  void write(LogLevel level, const std::string& message) const;
  // A startup fact every job's log should show (rank 0's transport line): written as INFO at the
  // default level (WARNING) too; only ERROR and FATAL hide it.
  void notice(const std::string& message) const;

  template <typename... Args>
  void log(LogLevel level, fmt::format_string<Args...> f, Args&&... args) const {
    if (enabled(level)) write(level, fmt::format(f, std::forward<Args>(args)...));
  }

 private:
  LogLevel level_;
  bool hide_time_;
  LogSink sink_;  // null = stderr
  int rank_ = -1;

  void emit(LogLevel level, const std::string& message) const;
};

}  // namespace korovod
