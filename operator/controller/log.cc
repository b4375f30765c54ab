#include "controller/log.h"

#include <chrono>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace controller {
namespace {

const char* level_name(LogLevel l) {
  switch (l) {
    case LogLevel::Trace: return "trace";
    case LogLevel::Debug: return "debug";
    case LogLevel::Info: return "info";
    case LogLevel::Warning: return "warning";
    case LogLevel::Error: return "error";
  }
  return "info";
}

// logfmt: quote values with spaces, quotes, '=' or nothing in them.
std::string quote(const std::string& v) {
  bool plain = !v.empty();
  for (char c : v) {
    if (c == ' ' || c == '"' || c == '=' || c == '\\' || static_cast<unsigned char>(c) < 0x20) {
      plain = false;
    }
  }
  if (plain) return v;
  return nlohmann::json(v).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string timestamp(std::chrono::system_clock::time_point t) {
  using namespace std::chrono;
  const auto ms = duration_cast<milliseconds>(t.time_since_epoch()).count() % 1000;
  std::string s = kube::format_time(t);  // 2026-01-02T03:04:05Z
  char frac[8];
  std::snprintf(frac, sizeof frac, ".%03d", static_cast<int>(ms));
  return s.substr(0, s.size() - 1) + frac + "Z";
}

}  // namespace

LogFormat parse_log_format(const std::string& s) {
  if (s == "text") return LogFormat::Text;
  if (s == "json") return LogFormat::Json;
  throw std::invalid_argument("--log-format must be text or json, not '" + s + "'");
}

LogLevel parse_log_level(const std::string& s) {
  if (s == "trace") return LogLevel::Trace;
  if (s == "debug") return LogLevel::Debug;
  if (s == "info") return LogLevel::Info;
  if (s == "warning" || s == "warn") return LogLevel::Warning;
  if (s == "error") return LogLevel::Error;
  throw std::invalid_argument("--log-level must be one of trace, debug, info, warning, error, not '" +
                              s + "'");
}

std::string Logger::format(LogLevel l, const std::string& msg, const LogFields& fields) const {
  const std::string ts = timestamp(clock_.now());
  if (format_ == LogFormat::Json) {
    nlohmann::ordered_json j;
    j["ts"] = ts;
    j["level"] = level_name(l);
    j["msg"] = msg;
    for (const auto& [k, v] : fields) j[k] = v;
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  std::string line = "ts=" + ts + " level=" + level_name(l) + " msg=" + quote(msg);
  for (const auto& [k, v] : fields) line += " " + k + "=" + quote(v);
  return line;
}

void Logger::log(LogLevel l, const std::string& msg, const LogFields& fields) {
  if (!enabled(l)) return;
  const std::string line = format(l, msg, fields);
  kube::MutexLock lock(mu_);
  out_ << line << '\n' << std::flush;
}

}  // namespace controller
