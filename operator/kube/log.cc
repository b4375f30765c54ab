#include "kube/log.h"

#include <stdexcept>

#include <nlohmann/json.hpp>

namespace kube {

LogLevel parse_log_level(const std::string& s) {
  if (s == "debug") return LogLevel::Debug;
  if (s == "info") return LogLevel::Info;
  if (s == "warn" || s == "warning") return LogLevel::Warn;
  if (s == "error") return LogLevel::Error;
  throw std::invalid_argument("unknown log level \"" + s + "\" (debug, info, warn, error)");
}

LogFormat parse_log_format(const std::string& s) {
  if (s == "text" || s == "kv" || s == "logfmt") return LogFormat::KeyValue;
  if (s == "json") return LogFormat::Json;
  throw std::invalid_argument("unknown log format \"" + s + "\" (text, json)");
}

const char* log_level_name(LogLevel l) {
  switch (l) {
    case LogLevel::Debug: return "debug";
    case LogLevel::Info: return "info";
    case LogLevel::Warn: return "warn";
    case LogLevel::Error: return "error";
  }
  return "info";
}

namespace {

// logfmt: bare when safe, else quoted with \" \\ \n escaped.
std::string kv_value(const std::string& v) {
  bool bare = !v.empty();
  for (char c : v)
    if (c == ' ' || c == '"' || c == '=' || c == '\\' || static_cast<unsigned char>(c) < 0x20)
      bare = false;
  if (bare) return v;
  std::string out = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else out += c;
  }
  return out + "\"";
}

}  // namespace

Logger::Logger(std::ostream& out, LogFormat format, LogLevel min_level, const Clock* clock)
    : Logger(std::shared_ptr<Sink>(new Sink{out, {}}), format, min_level, clock, {}) {}

Logger::Logger(std::shared_ptr<Sink> sink, LogFormat format, LogLevel min_level,
               const Clock* clock, LogFields fields)
    : sink_(std::move(sink)), format_(format), min_level_(min_level), clock_(clock),
      fields_(std::move(fields)) {}

Logger Logger::with(const LogFields& fields) const {
  LogFields all = fields_;
  all.insert(all.end(), fields.begin(), fields.end());
  return Logger(sink_, format_, min_level_, clock_, std::move(all));
}

std::string Logger::format_line(LogLevel level, const std::string& msg,
                                const LogFields& fields) const {
  const std::string ts =
      format_micro_time(clock_ ? clock_->now() : std::chrono::system_clock::now());
  if (format_ == LogFormat::Json) {
    nlohmann::ordered_json j = {{"ts", ts}, {"level", log_level_name(level)}, {"msg", msg}};
    for (const auto* set : {&fields_, &fields})
      for (const auto& [k, v] : *set) j[k] = v;
    // Replace invalid UTF-8 rather than throw: a log line must never fail.
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  std::string line = "ts=" + ts + " level=" + log_level_name(level) + " msg=" + kv_value(msg);
  for (const auto* set : {&fields_, &fields})
    for (const auto& [k, v] : *set) line += " " + k + "=" + kv_value(v);
  return line + "\n";
}

void Logger::log(LogLevel level, const std::string& msg, const LogFields& fields) const {
  if (!enabled(level)) return;
  const std::string line = format_line(level, msg, fields);
  MutexLock lock(sink_->mu);
  sink_->out << line;
  sink_->out.flush();
}

void Logger::debug(const std::string& msg, const LogFields& f) const { log(LogLevel::Debug, msg, f); }
void Logger::info(const std::string& msg, const LogFields& f) const { log(LogLevel::Info, msg, f); }
void Logger::warn(const std::string& msg, const LogFields& f) const { log(LogLevel::Warn, msg, f); }
void Logger::error(const std::string& msg, const LogFields& f) const { log(LogLevel::Error, msg, f); }

}  // namespace kube
