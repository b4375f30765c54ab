#include "settings.h"

#include <fmt/format.h>

#include <charconv>

namespace korovod::agent {

Result<tcp::JobSecret> job_secret_from(const EnvMap& env) {
  Result<tcp::JobSecret> secret = tcp::job_secret_from_env(env);
  if (secret.is_ok() && !secret->enabled()) {
    return Status::invalid_argument(fmt::format(
        "{} is not set, nor KOROVOD_JOB_SECRET_FILE: korovod-agent needs the job's secret (in an MPIJob's pods "
        "the operator mounts it and sets KOROVOD_JOB_SECRET_FILE)",
        kSecretVariable));
  }
  return secret;
}

Result<int> parse_port(const std::string& text, const std::string& what) {
  int port = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (ec != std::errc() || end != text.data() + text.size() || port < 1 || port > 65535) {
    return Status::invalid_argument(fmt::format("{} '{}' is not a port number (1-65535)", what, text));
  }
  return port;
}

Result<int> port_from(const EnvMap& env) {
  auto it = env.find(kPortVariable);
  if (it == env.end() || it->second.empty()) return kDefaultPort;
  return parse_port(it->second, kPortVariable);
}

Result<double> connect_timeout_from(const EnvMap& env) {
  auto it = env.find(kConnectTimeoutVariable);
  if (it == env.end() || it->second.empty()) return kDefaultConnectTimeoutSeconds;
  double seconds = 0;
  const std::string& text = it->second;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec != std::errc() || end != text.data() + text.size() || seconds <= 0) {
    return Status::invalid_argument(
        fmt::format("{} '{}' is not a positive number of seconds", kConnectTimeoutVariable, text));
  }
  return seconds;
}

}  // namespace korovod::agent
