#include "core/logger.h"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace korovod {
namespace {

const char* level_name(LogLevel level) {
  static constexpr const char* kNames[] = {"TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "FATAL"};
  return kNames[static_cast<int>(level)];
}

}  // namespace

Logger::Logger(LogLevel level, bool hide_time, LogSink sink)
    : level_(level), hide_time_(hide_time), sink_(std::move(sink)) {}

void Logger::write(LogLevel level, const std::string& message) const {
  if (enabled(level)) emit(level, message);
}

void Logger::notice(const std::string& message) const {
  if (level_ <= LogLevel::kWarning) emit(LogLevel::kInfo, message);
}

void Logger::emit(LogLevel level, const std::string& message) const {
  if (sink_) {
    sink_(level, message);
    return;
  }
  std::string stamp;
  if (!hide_time_) {
    std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S ", std::localtime(&t));
    stamp = buf;
  }
  std::fprintf(stderr, "[%skorovod rank %d] %s: %s\n", stamp.c_str(), rank_, level_name(level),
               message.c_str());
}

}  // namespace korovod
