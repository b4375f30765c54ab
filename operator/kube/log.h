// A small structured logger: levels, key=value or JSON lines, thread-safe, writing to an
// injected std::ostream (the operator binary passes std::cerr and its --log-format).
//
//   Logger log(std::cerr, LogFormat::Json);
//   log.info("reconciled", {{"mpijob", "ns/pi"}, {"took_ms", "12"}});
//   auto job_log = log.with({{"mpijob", "ns/pi"}});  // shares the sink, adds fields
#pragma once

#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "kube/clock.h"
#include "kube/mutex.h"

namespace kube {

enum class LogLevel { Debug = 0, Info = 1, Warn = 2, Error = 3 };
enum class LogFormat { KeyValue, Json };
using LogFields = std::vector<std::pair<std::string, std::string>>;

// Parse flag values ("debug|info|warn|error", "text|kv|json"); throw std::invalid_argument.
LogLevel parse_log_level(const std::string& s);
LogFormat parse_log_format(const std::string& s);
const char* log_level_name(LogLevel l);

class Logger {
 public:
  // clock: for timestamps; nullptr = the real clock.
  explicit Logger(std::ostream& out, LogFormat format = LogFormat::KeyValue,
                  LogLevel min_level = LogLevel::Info, const Clock* clock = nullptr);

  void log(LogLevel level, const std::string& msg, const LogFields& fields = {}) const;
  void debug(const std::string& msg, const LogFields& fields = {}) const;
  void info(const std::string& msg, const LogFields& fields = {}) const;
  void warn(const std::string& msg, const LogFields& fields = {}) const;
  void error(const std::string& msg, const LogFields& fields = {}) const;
  bool enabled(LogLevel level) const { return level >= min_level_; }

  // A logger writing to the same sink with `fields` added to every line.
  Logger with(const LogFields& fields) const;

 private:
  struct Sink {
    std::ostream& out;
    Mutex mu;  // serializes whole lines
  };
  Logger(std::shared_ptr<Sink> sink, LogFormat format, LogLevel min_level, const Clock* clock,
         LogFields fields);
  std::string format_line(LogLevel level, const std::string& msg, const LogFields& fields) const;

  std::shared_ptr<Sink> sink_;
  LogFormat format_;
  LogLevel min_level_;
  const Clock* clock_;  // nullptr = real time
  LogFields fields_;    // from with()
};

}  // namespace kube
