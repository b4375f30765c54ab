#include "korovod/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <string_view>

extern char** environ;  // POSIX; read only by process_environment()

namespace korovod {
namespace {

// KOROVOD_<suffix> wins over HOROVOD_<suffix>. Returns the name found and its value.
std::optional<std::pair<std::string, std::string>> lookup(const EnvMap& env, const std::string& suffix) {
  for (const char* prefix : {"KOROVOD_", "HOROVOD_"}) {
    auto it = env.find(prefix + suffix);
    if (it != env.end() && !it->second.empty()) return std::make_pair(it->first, it->second);
  }
  return std::nullopt;
}

Status bad(const std::string& name, const std::string& value, const char* expected) {
  return Status::invalid_argument(fmt::format("{}={:?}: expected {}", name, value, expected));
}

template <typename T>
Status read_number(const EnvMap& env, const std::string& suffix, T& out, T min_value) {
  auto found = lookup(env, suffix);
  if (!found) return Status::ok();
  const std::string& v = found->second;
  T parsed{};
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), parsed);
  if (ec != std::errc() || end != v.data() + v.size() || parsed < min_value) {
    return bad(found->first, v, "a non-negative number");
  }
  out = parsed;
  return Status::ok();
}

Status read_bool(const EnvMap& env, const std::string& suffix, bool& out) {
  auto found = lookup(env, suffix);
  if (!found) return Status::ok();
  std::string v = found->second;
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
  if (v == "1" || v == "true" || v == "yes" || v == "on") out = true;
  else if (v == "0" || v == "false" || v == "no" || v == "off") out = false;
  else return bad(found->first, found->second, "0/1/true/false");
  return Status::ok();
}

Status read_log_level(const EnvMap& env, LogLevel& out) {
  auto found = lookup(env, "LOG_LEVEL");
  if (!found) return Status::ok();
  std::string v = found->second;
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::toupper(c); });
  static constexpr std::pair<const char*, LogLevel> kLevels[] = {
      {"TRACE", LogLevel::kTrace}, {"DEBUG", LogLevel::kDebug}, {"INFO", LogLevel::kInfo},
      {"WARNING", LogLevel::kWarning}, {"WARN", LogLevel::kWarning}, {"ERROR", LogLevel::kError},
      {"FATAL", LogLevel::kFatal}};
  for (const auto& [name, level] : kLevels) {
    if (v == name) {
      out = level;
      return Status::ok();
    }
  }
  return bad(found->first, found->second, "TRACE, DEBUG, INFO, WARNING, ERROR or FATAL");
}

Status read_core_list(const EnvMap& env, std::vector<int>& out) {
  auto found = lookup(env, "THREAD_AFFINITY");
  if (!found) return Status::ok();
  const std::string& v = found->second;
  size_t pos = 0;
  while (pos <= v.size()) {
    size_t comma = std::min(v.find(',', pos), v.size());
    int core = -1;
    auto [end, ec] = std::from_chars(v.data() + pos, v.data() + comma, core);
    if (ec != std::errc() || end != v.data() + comma || core < 0) {
      return bad(found->first, v, "a comma-separated list of core ids");
    }
    out.push_back(core);
    pos = comma + 1;
  }
  return Status::ok();
}

// One of a few words, case-insensitive; anything else is an error naming the variable.
Status read_choice(const EnvMap& env, const std::string& suffix, std::initializer_list<std::string_view> allowed,
                   const char* expected, std::string& out) {
  auto found = lookup(env, suffix);
  if (!found) return Status::ok();
  std::string v = found->second;
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
  if (std::find(allowed.begin(), allowed.end(), v) == allowed.end()) return bad(found->first, found->second, expected);
  out = v;
  return Status::ok();
}

// The interface the TCP data plane listens on; the names Horovod's Gloo and NCCL users already set
// are accepted. NCCL_SOCKET_IFNAME may list several ("eth0,eth1"); an exclusion ("^docker") or
// prefix match is not an interface name, so it is ignored.
void read_tcp_iface(const EnvMap& env, std::string& out) {
  for (const char* name : {"KOROVOD_IFACE", "HOROVOD_GLOO_IFACE", "NCCL_SOCKET_IFNAME"}) {
    auto it = env.find(name);
    if (it == env.end() || it->second.empty() || it->second[0] == '^') continue;
    out = it->second.substr(it->second[0] == '=' ? 1 : 0);
    out = out.substr(0, out.find(','));
    return;
  }
}

}  // namespace

Result<Config> parse_config(const EnvMap& env) {
  Config c;
  KOROVOD_RETURN_IF_ERROR(read_number<int64_t>(env, "FUSION_THRESHOLD", c.fusion_threshold_bytes, 0));
  KOROVOD_RETURN_IF_ERROR(read_number<double>(env, "CYCLE_TIME", c.cycle_time_ms, 0.0));
  KOROVOD_RETURN_IF_ERROR(read_number<int>(env, "CACHE_CAPACITY", c.cache_capacity, 0));
  KOROVOD_RETURN_IF_ERROR(read_bool(env, "INLINE_CYCLES", c.inline_cycles));
  if (auto t = lookup(env, "TIMELINE")) c.timeline_path = t->second;
  KOROVOD_RETURN_IF_ERROR(read_bool(env, "TIMELINE_MARK_CYCLES", c.timeline_mark_cycles));
  bool stall_disable = false;
  KOROVOD_RETURN_IF_ERROR(read_bool(env, "STALL_CHECK_DISABLE", stall_disable));
  c.stall_check_enabled = !stall_disable;
  KOROVOD_RETURN_IF_ERROR(read_number<double>(env, "STALL_CHECK_TIME_SECONDS", c.stall_warning_seconds, 0.0));
  KOROVOD_RETURN_IF_ERROR(
      read_number<double>(env, "STALL_SHUTDOWN_TIME_SECONDS", c.stall_shutdown_seconds, 0.0));
  KOROVOD_RETURN_IF_ERROR(
      read_number<double>(env, "COLLECTIVE_TIMEOUT_SECONDS", c.collective_timeout_seconds, 0.0));
  KOROVOD_RETURN_IF_ERROR(read_bool(env, "ABORT_ON_COLLECTIVE_TIMEOUT", c.abort_on_collective_timeout));
  KOROVOD_RETURN_IF_ERROR(read_log_level(env, c.log_level));
  KOROVOD_RETURN_IF_ERROR(read_bool(env, "LOG_HIDE_TIME", c.log_hide_time));
  KOROVOD_RETURN_IF_ERROR(read_core_list(env, c.thread_affinity));
  KOROVOD_RETURN_IF_ERROR(read_bool(env, "DYNAMIC_PROCESS_SETS", c.dynamic_process_sets));
  KOROVOD_RETURN_IF_ERROR(read_bool(env, "MPI_THREADS_DISABLE", c.mpi_threads_disable));
  // Horovod's HOROVOD_CPU_OPERATIONS names the CPU data plane (mpi, gloo, ccl); korovod has mpi,
  // its own shared-memory and TCP paths, and refuses the others rather than silently running
  // something else.
  KOROVOD_RETURN_IF_ERROR(read_choice(env, "CPU_OPERATIONS", {"mpi", "shm", "tcp"}, "mpi, shm or tcp", c.cpu_operations));
  // Horovod's HOROVOD_GPU_OPERATIONS=NCCL|MPI: MPI moves GPU tensors through host memory, which
  // is what staging does (over whichever CPU data plane the set has).
  KOROVOD_RETURN_IF_ERROR(read_choice(env, "GPU_OPERATIONS", {"nccl", "staging", "mpi"},
                                      "nccl, staging or mpi (= staging)", c.gpu_operations));
  if (c.gpu_operations == "mpi") c.gpu_operations = "staging";
  KOROVOD_RETURN_IF_ERROR(read_number<int64_t>(env, "SHM_SLOT_BYTES", c.shm_slot_bytes, 4096));
  KOROVOD_RETURN_IF_ERROR(read_number<int>(env, "SHM_SLOTS", c.shm_slots, 4));
  KOROVOD_RETURN_IF_ERROR(read_number<int64_t>(env, "SHM_STREAMING_BYTES", c.shm_streaming_bytes, 0));
  KOROVOD_RETURN_IF_ERROR(
      read_choice(env, "SHM_SLOT_STORES", {"auto", "cached", "streaming"}, "auto, cached or streaming", c.shm_slot_stores));
  KOROVOD_RETURN_IF_ERROR(read_bool(env, "AUTOTUNE", c.autotune));
  if (auto log = lookup(env, "AUTOTUNE_LOG")) c.autotune_log = log->second;
  KOROVOD_RETURN_IF_ERROR(read_number<int>(env, "AUTOTUNE_WARMUP_SAMPLES", c.autotune_warmup_samples, 0));
  KOROVOD_RETURN_IF_ERROR(read_number<int>(env, "AUTOTUNE_STEPS_PER_SAMPLE", c.autotune_steps_per_sample, 1));
  KOROVOD_RETURN_IF_ERROR(read_number<int>(env, "AUTOTUNE_WINDOWS_PER_SAMPLE", c.autotune_windows_per_sample, 1));
  // Horovod's name for the sample budget, then korovod's (which wins when both are set).
  KOROVOD_RETURN_IF_ERROR(read_number<int>(env, "AUTOTUNE_BAYES_OPT_MAX_SAMPLES", c.autotune_max_samples, 1));
  KOROVOD_RETURN_IF_ERROR(read_number<int>(env, "AUTOTUNE_MAX_SAMPLES", c.autotune_max_samples, 1));
  KOROVOD_RETURN_IF_ERROR(read_bool(env, "AUTOTUNE_CHUNK", c.autotune_chunk));
  read_tcp_iface(env, c.tcp_iface);
  KOROVOD_RETURN_IF_ERROR(read_number<int64_t>(env, "TCP_SEGMENT_BYTES", c.tcp_segment_bytes, 64));
  KOROVOD_RETURN_IF_ERROR(read_bool(env, "HIERARCHICAL_ALLREDUCE", c.hierarchical_allreduce));
  if (auto h = lookup(env, "HOST_ID")) c.host_id = h->second;
  if (auto h = lookup(env, "HOSTNAME")) c.hostname = h->second;
  c.shm_slot_bytes = c.shm_slot_bytes / 4096 * 4096;  // whole pages: slots stay 64-byte aligned
  for (const char* name : kNetworkEnvNames) {
    if (auto it = env.find(name); it != env.end()) c.network_env.emplace_back(name, it->second);
  }
  return c;
}

EnvMap process_environment() {
  EnvMap env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry(*e);
    size_t eq = entry.find('=');
    if (eq != std::string::npos) env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return env;
}

}  // namespace korovod
