#include "rank_env.h"

#include <fmt/format.h>

#include <cstdint>

namespace korovod::launcher {
namespace {

void set_both(EnvMap& env, const std::string& suffix, const std::string& value) {
  env["HOROVOD_" + suffix] = value;
  env["KOROVOD_" + suffix] = value;
}

bool is_shell_name(const std::string& name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

}  // namespace

EnvMap tuning_env(const LaunchOptions& o) {
  EnvMap env;
  if (o.fusion_threshold_mb) set_both(env, "FUSION_THRESHOLD", std::to_string(int64_t{*o.fusion_threshold_mb} << 20));
  if (o.cycle_time_ms) set_both(env, "CYCLE_TIME", fmt::format("{}", *o.cycle_time_ms));
  if (!o.timeline_filename.empty()) {
    set_both(env, "TIMELINE", o.timeline_filename);
    set_both(env, "TIMELINE_MARK_CYCLES", o.timeline_mark_cycles ? "1" : "0");
  }
  if (o.autotune) {
    set_both(env, "AUTOTUNE", "1");
    if (!o.autotune_log_file.empty()) set_both(env, "AUTOTUNE_LOG", o.autotune_log_file);
  }
  if (o.start_timeout_seconds) set_both(env, "START_TIMEOUT", std::to_string(*o.start_timeout_seconds));
  if (o.verbose) set_both(env, "LOG_LEVEL", "DEBUG");
  if (!o.network_interfaces.empty()) {
    const std::string& first = o.network_interfaces.front();
    env["KOROVOD_IFACE"] = first;
    env["HOROVOD_GLOO_IFACE"] = first;
    env["NCCL_SOCKET_IFNAME"] = fmt::format("{}", fmt::join(o.network_interfaces, ","));
  }
  return env;
}

EnvMap slot_env(const SlotAssignment& s, const Rendezvous& rendezvous) {
  EnvMap env;
  env["KOROVOD_RANK"] = std::to_string(s.rank);
  env["KOROVOD_SIZE"] = std::to_string(s.size);
  env["KOROVOD_HOST_ID"] = s.hostname;
  env["KOROVOD_RENDEZVOUS_ADDR"] = rendezvous.address;
  env["KOROVOD_RENDEZVOUS_PORT"] = std::to_string(rendezvous.port);
  env["KOROVOD_RENDEZVOUS_SERVER"] = "external";
  env["HOROVOD_HOSTNAME"] = s.hostname;
  env["HOROVOD_RANK"] = std::to_string(s.rank);
  env["HOROVOD_SIZE"] = std::to_string(s.size);
  env["HOROVOD_LOCAL_RANK"] = std::to_string(s.local_rank);
  env["HOROVOD_LOCAL_SIZE"] = std::to_string(s.local_size);
  env["HOROVOD_CROSS_RANK"] = std::to_string(s.cross_rank);
  env["HOROVOD_CROSS_SIZE"] = std::to_string(s.cross_size);
  // Python behind a pipe buffers whole blocks; horovodrun sets this so lines arrive as printed.
  env["PYTHONUNBUFFERED"] = "1";
  return env;
}

EnvMap merged(EnvMap base, const EnvMap& overrides) {
  for (const auto& [k, v] : overrides) base[k] = v;
  return base;
}

bool is_exportable(const std::string& name) {
  if (!is_shell_name(name)) return false;  // also rules out BASH_FUNC_f%%
  return name != "OLDPWD" && name.find("CUDA_VISIBLE_DEVICES") == std::string::npos && name != "HOROVOD_SECRET_KEY" &&
         name != "KOROVOD_JOB_SECRET";
}

std::string shell_quote(const std::string& word) {
  const bool safe = !word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                           "0123456789@%+=:,./_-") == std::string::npos;
  if (safe) return word;
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\"'\"'";
    } else {
      out += c;
    }
  }
  return out + "'";
}

}  // namespace korovod::launcher
