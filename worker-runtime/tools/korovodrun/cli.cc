#include "cli.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iterator>
#include <sstream>

#include "korovod/status.h"

namespace korovod::launcher {
namespace {

constexpr int kUsageError = 2;

const char* const kDescription =
    "korovodrun: start a korovod (Horovod-compatible) job, as horovodrun does.\n"
    "usage: korovodrun -np N [-H host:slots,... | --hostfile F] [options] COMMAND [ARGS...]\n"
    "Default (--tcp): korovodrun starts the ranks itself (local processes, ssh for other hosts) and\n"
    "hosts their rendezvous store; every output line is prefixed [<rank>]<stdout>: or [<rank>]<stderr>:.\n"
    "--mpi: runs the job under Open MPI's mpirun instead. See docs/korovodrun.md.\n"
    "Elastic (--min-np, --max-np or --host-discovery-script): korovodrun drives the membership: workers\n"
    "come and go in rounds, their lines are prefixed [<host>:<slot>]. See docs/elastic.md.\n";

std::string long_name_of(const std::string& arg) {
  if (arg == "-np") return "--num-proc";
  if (arg == "-cb") return "--check-build";
  if (arg == "-hostfile") return "--hostfile";
  return arg;
}

// An integer flag's lower bound. CLI11's PositiveNumber / NonNegativeNumber check a double and
// say "Value 0 not in range 0.000000 to 1797...": a range that holds the rejected value.
CLI::Validator integer_at_least(long long lowest) {
  const std::string allowed = fmt::format("an integer >= {}", lowest);
  return CLI::Validator(
      [lowest, allowed](std::string& text) -> std::string {
        long long value = 0;
        if (!CLI::detail::lexical_cast(text, value) || value < lowest) return fmt::format("{} is not {}", text, allowed);
        return "";
      },
      fmt::format(">={}", lowest));
}

struct RawFlags {
  std::vector<std::string> interface_each;   // --network-interface, repeatable
  std::string interface_list;                // --network-interfaces a,b
  bool mpi = false, tcp = false;
};

void define_elastic_flags(CLI::App& app, LaunchOptions& o) {
  const char* group = "Elastic (docs/elastic.md)";
  app.add_option("--min-np,--min-num-proc", o.min_np,
                 "elastic: fewest workers training goes on with (default -np); below it korovodrun waits "
                 "up to --elastic-timeout for more")
      ->check(integer_at_least(1))->group(group);
  app.add_option("--max-np,--max-num-proc", o.max_np, "elastic: most workers (default: every discovered slot)")
      ->check(integer_at_least(1))->group(group);
  app.add_option("--host-discovery-script", o.host_discovery_script,
                 "elastic: command printing the available hosts, one 'host:slots' or 'host' per line; run every second")
      ->group(group);
  app.add_option("--slots-per-host", o.slots_per_host, "elastic: slots of a host the discovery script prints without ':slots' (default 1)")
      ->check(integer_at_least(1))->group(group);
  app.add_option("--elastic-timeout", o.elastic_timeout_seconds,
                 "elastic: seconds to wait for --min-np workers (and for workers to start a round); default "
                 "HOROVOD_ELASTIC_TIMEOUT or 600")
      ->check(integer_at_least(1))->group(group);
  app.add_option("--reset-limit", o.reset_limit, "elastic: most resets (new rounds after the first) before the job fails")
      ->check(integer_at_least(0))->group(group);
  app.add_option("--blacklist-cooldown-range", o.blacklist_cooldown_range,
                 "elastic: MIN MAX seconds a failing host stays blacklisted (default: for good)")
      ->expected(2)
      ->allow_extra_args(false)  // exactly MIN MAX: the command after them is not a third value
      ->group(group);
  app.add_option("--blacklist-after-failures", o.blacklist_after_failures,
                 "elastic: a host is blacklisted when the workers of one of its slots fail this many times in a "
                 "row without completing a round's start (default 3; 1 = Horovod)")
      ->check(integer_at_least(1))->group(group);
}

void define_flags(CLI::App& app, LaunchOptions& o, RawFlags& raw) {
  app.add_option("--num-proc", o.num_proc, "-np N: number of ranks (processes) to start")->check(integer_at_least(1));
  app.add_flag("--check-build", o.check_build, "-cb: print what korovod was built with, then exit");
  auto* hosts = app.add_option("-H,--hosts", o.hosts, "hosts and their slots: host:slots,host2:slots (default localhost:N)");
  auto* hostfile = app.add_option("--hostfile", o.hostfile, "-hostfile F: lines 'host slots=N' or 'host:N'");
  hosts->excludes(hostfile);
  app.add_option("-p,--ssh-port", o.ssh_port, "ssh port on every host")->check(CLI::Range(1, 65535));
  app.add_option("-i,--ssh-identity-file", o.ssh_identity_file, "ssh private key for every host");
  app.add_option("--rsh-agent", o.rsh_agent,
                 "command that runs in ssh's place for remote ranks, e.g. \"korovod-agent rsh\" (docs/agent.md); "
                 "default: KOROVOD_RSH_AGENT, else ssh");
  app.add_option("--network-interface", raw.interface_each,
                 "interface the ranks talk over (KOROVOD_IFACE, NCCL_SOCKET_IFNAME; mpirun: btl_tcp_if_include); "
                 "repeatable")
      ->allow_extra_args(false);
  app.add_option("--network-interfaces", raw.interface_list, "the same, as a comma-separated list");
  app.add_option("--start-timeout", o.start_timeout_seconds,
                 "seconds for every rank to reach the rendezvous and for ssh to connect (HOROVOD_START_TIMEOUT)")
      ->check(integer_at_least(1));
  auto* timeline = app.add_option("--timeline-filename", o.timeline_filename, "rank 0 writes a Chrome trace here");
  app.add_flag("--timeline-mark-cycles", o.timeline_mark_cycles, "mark each negotiation cycle in the timeline")
      ->needs(timeline);
  auto* autotune = app.add_flag("--autotune", o.autotune, "tune fusion threshold and cycle time online");
  app.add_option("--autotune-log-file", o.autotune_log_file, "CSV of the autotune samples")->needs(autotune);
  app.add_option("--cycle-time-ms", o.cycle_time_ms, "ms between negotiation cycles (HOROVOD_CYCLE_TIME)")
      ->check(CLI::PositiveNumber);
  app.add_option("--fusion-threshold-mb", o.fusion_threshold_mb, "fusion buffer MiB; 0 disables fusion")
      ->check(integer_at_least(0));
  app.add_flag("--verbose", o.verbose, "print each rank's command, the store's address and every exit; "
                                       "ranks log at DEBUG");
  auto* mpi = app.add_flag("--mpi", raw.mpi, "run under Open MPI's mpirun (horovodrun --mpi)");
  auto* tcp = app.add_flag("--tcp,--gloo", raw.tcp, "korovodrun starts the ranks and hosts the store (the default)");
  mpi->excludes(tcp);
  define_elastic_flags(app, o);
}

// Everything after the flags, as the user wrote it: the rewritten spellings must not reach the
// command (`python train.py -np 3` keeps its -np).
Result<std::vector<std::string>> command_part(const std::vector<std::string>& original, size_t remaining) {
  std::vector<std::string> command(original.end() - static_cast<std::ptrdiff_t>(remaining), original.end());
  if (!command.empty() && command.front() == "--") {
    command.erase(command.begin());
  } else if (!command.empty() && command.front().size() > 1 && command.front()[0] == '-') {
    return Status::invalid_argument(fmt::format("unknown flag {} (see --help)", command.front()));
  }
  return command;
}

Status finish_options(LaunchOptions& o, RawFlags& raw) {
  o.network_interfaces = raw.interface_each;
  std::stringstream list(raw.interface_list);
  for (std::string name; std::getline(list, name, ',');) {
    if (!name.empty()) o.network_interfaces.push_back(name);
  }
  o.controller = raw.mpi ? Controller::kMpi : Controller::kTcp;
  if (o.check_build) return Status::ok();  // horovodrun -cb needs nothing else
  if (o.elastic()) {
    if (o.controller == Controller::kMpi) return Status::invalid_argument("elastic mode runs without --mpi (as horovodrun's, on Gloo)");
    if (o.num_proc < 1 && !o.min_np) return Status::invalid_argument("elastic mode needs -np N or --min-np N");
    if (o.num_proc < 1) o.num_proc = *o.min_np;
    if (!o.min_np) o.min_np = o.num_proc;
    if (o.max_np && *o.max_np < *o.min_np) {
      return Status::invalid_argument(fmt::format("--max-np {} is below --min-np {}", *o.max_np, *o.min_np));
    }
    if (o.host_discovery_script.empty() && o.hosts.empty() && o.hostfile.empty()) {
      return Status::invalid_argument("elastic mode needs --host-discovery-script (or fixed hosts: -H or --hostfile)");
    }
    if (!o.host_discovery_script.empty() && (!o.hosts.empty() || !o.hostfile.empty())) {
      return Status::invalid_argument("give either --host-discovery-script or -H/--hostfile, not both");
    }
  } else if (!o.blacklist_cooldown_range.empty() || o.reset_limit || o.elastic_timeout_seconds) {
    return Status::invalid_argument("--reset-limit, --elastic-timeout and --blacklist-cooldown-range need elastic mode "
                                    "(--min-np, --max-np or --host-discovery-script)");
  }
  if (o.num_proc < 1) return Status::invalid_argument("-np N is required");
  if (o.command.empty()) return Status::invalid_argument("no command given (korovodrun -np N [options] COMMAND...)");
  return Status::ok();
}

}  // namespace

ParsedCommandLine parse_command_line(const std::vector<std::string>& args) {
  ParsedCommandLine parsed;
  RawFlags raw;
  CLI::App app{kDescription, "korovodrun"};
  define_flags(app, parsed.options, raw);
  app.prefix_command();
  std::vector<std::string> reversed;  // CLI11 takes a vector in reverse order
  std::transform(args.rbegin(), args.rend(), std::back_inserter(reversed), long_name_of);
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    parsed.exit_code = code == 0 ? 0 : kUsageError;
    return parsed;
  }
  Result<std::vector<std::string>> command = command_part(args, app.remaining_size());
  Status s = command.is_ok() ? Status::ok() : command.status();
  if (s.is_ok()) {
    parsed.options.command = std::move(command).value();
    s = finish_options(parsed.options, raw);
  }
  if (!s.is_ok()) {
    fmt::print(stderr, "korovodrun: {}\n", s.message());
    parsed.exit_code = kUsageError;
  }
  return parsed;
}

}  // namespace korovod::launcher
