// Runtime configuration, read once from the environment (KOROVOD_* names, HOROVOD_* accepted as
// aliases; the KOROVOD_ name wins when both are set). Defaults are documented in
// docs/runtime-config.md and match Horovod's where Horovod has the knob.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "korovod/status.h"

namespace korovod {

enum class LogLevel { kTrace = 0, kDebug, kInfo, kWarning, kError, kFatal };

struct Config {
  int64_t fusion_threshold_bytes = 128ll * 1024 * 1024;  // 0 disables fusion
  double cycle_time_ms = 1.0;
  // A thread waiting on an operation runs the negotiation cycles itself (no hand-off to the
  // background thread and back); see docs/runtime-config.md.
  bool inline_cycles = true;
  int cache_capacity = 1024;                              // 0 disables the response cache
  std::string timeline_path;                              // "" off; "DYNAMIC" = API only
  bool timeline_mark_cycles = false;
  bool stall_check_enabled = true;
  double stall_warning_seconds = 60.0;
  double stall_shutdown_seconds = 0.0;                    // 0 = warn only, never fail
  double collective_timeout_seconds = 60.0;               // 0 = no watchdog
  bool abort_on_collective_timeout = false;               // MPI_Abort after failing the ops
  LogLevel log_level = LogLevel::kWarning;
  bool log_hide_time = false;
  std::vector<int> thread_affinity;                       // core per local rank; empty = unset
  bool dynamic_process_sets = false;
  bool mpi_threads_disable = false;
  // CPU data plane: "" (default: shared memory when every rank of a process set shares the
  // host, else MPI), "mpi" (always MPI), "shm" (shared memory where possible, MPI elsewhere),
  // "tcp" (the TCP data plane for every CPU tensor).
  std::string cpu_operations;
  // GPU data plane (a build with NCCL): "" (default: NCCL, unless ranks of a process set share a
  // GPU on one host, which NCCL refuses: then host staging), "nccl" (always NCCL), "staging"
  // (always host staging: device -> host, the set's CPU data plane, host -> device). From
  // KOROVOD_GPU_OPERATIONS or HOROVOD_GPU_OPERATIONS, whose MPI means host staging here.
  std::string gpu_operations;
  int64_t shm_slot_bytes = 256 * 1024;  // one chunk slot of the shared-memory ring
  int shm_slots = 8;                   // slots per rank: the pipeline depth
  // Shared-memory allreduces whose output is at least this many bytes write it with streaming
  // stores (0 = never). See docs/runtime-config.md for the trade-off.
  int64_t shm_streaming_bytes = int64_t{1} << 20;
  // How a rank writes the slots its peers read in a ring allreduce: "auto" (measure both and keep
  // the faster), "cached" or "streaming". See docs/runtime-config.md.
  std::string shm_slot_stores = "auto";
  // The fabric settings NCCL / UCX act on, as set in the environment (NCCL_IB_HCA, ...; see
  // kNetworkEnvNames), only echoed in rank 0's startup line so a job's log shows what it ran with.
  std::vector<std::pair<std::string, std::string>> network_env;
  // Autotune (rank 0 searches fusion threshold x cycle time online; see docs/tuning.md).
  bool autotune = false;
  std::string autotune_log;            // CSV of the scored samples (rank 0); "" = none
  int autotune_warmup_samples = 3;     // discarded samples at the start
  int autotune_steps_per_sample = 10;  // cycles that reduced something, per window
  int autotune_windows_per_sample = 5; // a sample scores the median of this many windows
  int autotune_max_samples = 20;       // Horovod: AUTOTUNE_BAYES_OPT_MAX_SAMPLES
  bool autotune_chunk = true;          // also tune the shared-memory chunk (AUTOTUNE_CHUNK)
  // TCP data plane: the interface to listen on ("" = the hostname's address, else loopback;
  // KOROVOD_IFACE, else HOROVOD_GLOO_IFACE, else the first name in NCCL_SOCKET_IFNAME) and the
  // ring's pipeline segment.
  std::string tcp_iface;
  int64_t tcp_segment_bytes = 256 * 1024;
  // With the TCP data plane on a set that spans hosts: shared-memory reduce-scatter on each host,
  // TCP allreduce of each shard across hosts, shared-memory allgather.
  bool hierarchical_allreduce = false;
  std::string host_id;  // KOROVOD_HOST_ID: overrides this rank's host identity ("" = real one)
  // KOROVOD_HOSTNAME: what other ranks' errors call this rank's host ("" = gethostname(), or
  // MPI_Get_processor_name() under MPI); read here only, for both the MPI and the TCP start.
  std::string hostname;
};

inline constexpr const char* kNetworkEnvNames[] = {
    "NCCL_IB_HCA", "NCCL_IB_GID_INDEX", "NCCL_SOCKET_IFNAME", "NCCL_NET_GDR_LEVEL", "NCCL_IB_DISABLE",
    "UCX_NET_DEVICES", "UCX_TLS", "OMPI_MCA_pml", "OMPI_MCA_btl"};

using EnvMap = std::map<std::string, std::string>;

// Parses the KOROVOD_*/HOROVOD_* entries of `env`; unknown names are ignored, malformed values
// are an InvalidArgument error naming the variable.
Result<Config> parse_config(const EnvMap& env);
// A snapshot of the process environment (the only place that reads `environ`).
EnvMap process_environment();

}  // namespace korovod
