// What korovodrun was asked to do: its flags, read once (cli.h), with horovodrun's meanings.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace korovod::launcher {

enum class Controller {
  kTcp,  // korovodrun starts the ranks and hosts the rendezvous store (horovodrun --gloo)
  kMpi,  // korovodrun execs mpirun (horovodrun --mpi)
};

struct LaunchOptions {
  int num_proc = 0;                 // -np
  std::string hosts;                // -H host:slots,...
  std::string hostfile;             // --hostfile
  std::optional<int> ssh_port;      // -p
  std::string ssh_identity_file;    // -i
  std::string rsh_agent;            // --rsh-agent: what runs in ssh's place (words split on spaces)
  std::vector<std::string> network_interfaces;  // --network-interface(s); the first one is used
  std::optional<int> start_timeout_seconds;     // --start-timeout
  std::string timeline_filename;
  bool timeline_mark_cycles = false;
  bool autotune = false;
  std::string autotune_log_file;
  std::optional<double> cycle_time_ms;
  std::optional<int> fusion_threshold_mb;
  bool verbose = false;
  Controller controller = Controller::kTcp;
  bool check_build = false;
  // Elastic (horovodrun's names; any of --min-np, --max-np, --host-discovery-script = elastic).
  std::optional<int> min_np, max_np;
  std::string host_discovery_script;
  int slots_per_host = 1;
  std::optional<int> elastic_timeout_seconds;  // default: HOROVOD_ELASTIC_TIMEOUT, else 600
  std::optional<int> reset_limit;
  std::vector<int> blacklist_cooldown_range;   // MIN MAX seconds, or empty: blacklisting is for good
  int blacklist_after_failures = 3;            // korovod's: failures in a row that blacklist a host
  bool elastic() const { return min_np || max_np || !host_discovery_script.empty(); }
  std::vector<std::string> command;
};

}  // namespace korovod::launcher
