// A small structured logger for the operator: one line per record, `text` (logfmt-style
// key=value) or `json`. Used until/unless operator/kube grows a shared logger; the interface is
// deliberately tiny so swapping it is one file.
//
//   Logger log(std::cerr, LogFormat::Text, LogLevel::Info, clock);
//   log.info("reconciled", {{"key", "ns/job"}, {"duration_ms", "12"}});
#pragma once

#include <initializer_list>
#include <mutex>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "kube/clock.h"
#include "kube/mutex.h"

namespace controller {

enum class LogFormat { Text, Json };
enum class LogLevel { Trace = 0, Debug = 1, Info = 2, Warning = 3, Error = 4 };

// Throw std::invalid_argument naming the accepted values.
LogFormat parse_log_format(const std::string& s);
LogLevel parse_log_level(const std::string& s);

using LogFields = std::vector<std::pair<std::string, std::string>>;

class Logger {
 public:
  Logger(std::ostream& out, LogFormat format, LogLevel level, kube::Clock& clock)
      : out_(out), format_(format), level_(level), clock_(clock) {}

  bool enabled(LogLevel l) const { return l >= level_; }
  void log(LogLevel l, const std::string& msg, const LogFields& fields = {});
  void trace(const std::string& m, const LogFields& f = {}) { log(LogLevel::Trace, m, f); }
  void debug(const std::string& m, const LogFields& f = {}) { log(LogLevel::Debug, m, f); }
  void info(const std::string& m, const LogFields& f = {}) { log(LogLevel::Info, m, f); }
  void warning(const std::string& m, const LogFields& f = {}) { log(LogLevel::Warning, m, f); }
  void error(const std::string& m, const LogFields& f = {}) { log(LogLevel::Error, m, f); }

  // The formatted line, without the trailing newline (exposed for tests).
  std::string format(LogLevel l, const std::string& msg, const LogFields& fields) const;

 private:
  // Constant after construction.
  std::ostream& out_;
  const LogFormat format_;
  const LogLevel level_;
  kube::Clock& clock_;
  kube::Mutex mu_;  // one line at a time
};

}  // namespace controller
