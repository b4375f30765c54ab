#include "tcp_launch.h"

#include <fmt/format.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "local_host.h"
#include "remote_command.h"
#include "transport/tcp/store.h"

namespace korovod::launcher {

Result<std::vector<HostSlots>> hosts_from_options(const LaunchOptions& o) {
  if (!o.hosts.empty()) return parse_hosts(o.hosts);
  if (!o.hostfile.empty()) {
    std::ifstream file(o.hostfile);
    if (!file) return Status::invalid_argument(fmt::format("--hostfile {}: cannot read it", o.hostfile));
    std::stringstream text;
    text << file.rdbuf();
    return parse_hostfile(text.str(), o.hostfile);
  }
  return std::vector<HostSlots>{{"localhost", o.num_proc}};
}

std::vector<RankLaunch> plan_ranks(const LaunchOptions& o, const std::vector<SlotAssignment>& slots,
                                   const RankPlanInputs& in) {
  const EnvMap job_env = merged(in.caller_env, tuning_env(o));
  const SshOptions ssh = ssh_options_for(o, in.caller_env);
  std::vector<RankLaunch> ranks;
  for (const SlotAssignment& s : slots) {
    RankLaunch r;
    r.rank = s.rank;
    r.host = s.hostname;
    r.remote = in.remote_hosts.count(s.hostname) > 0;
    EnvMap rank_env = merged(job_env, slot_env(s, in.rendezvous));
    const bool secret = !in.job_secret.empty();
    if (r.remote) {
      r.process.argv =
          ssh_command(s.hostname, ssh, remote_rank_script(o.command, rank_env, in.cwd, in.grace_seconds, secret));
      r.process.env = in.caller_env;
      r.process.stdin_pipe = true;
      if (secret) r.process.stdin_data = in.job_secret + "\n";
    } else {
      if (secret) rank_env["KOROVOD_JOB_SECRET"] = in.job_secret;
      r.process.argv = o.command;
      r.process.env = rank_env;
    }
    ranks.push_back(std::move(r));
  }
  return ranks;
}

namespace {

std::string current_directory() {
  char buf[4096];
  return getcwd(buf, sizeof buf) ? std::string(buf) : std::string(".");
}

}  // namespace

int run_tcp_job(const LaunchOptions& o, const EnvMap& caller_env, OutputSink& sink,
                const SupervisorOptions& supervision, GroupWatcher* watcher) {
  auto fail = [&sink](const Status& s) {
    say(sink, s.message());
    return 1;
  };
  Result<std::vector<HostSlots>> hosts = hosts_from_options(o);
  if (!hosts.is_ok()) return fail(hosts.status());
  Result<std::vector<SlotAssignment>> slots = assign_slots(*hosts, o.num_proc);
  if (!slots.is_ok()) return fail(slots.status());

  const LocalHost local = discover_local_host();
  RankPlanInputs in;
  StoreAddressInputs where;
  for (const HostSlots& h : *hosts) {
    const bool used = std::any_of(slots->begin(), slots->end(), [&h](const SlotAssignment& s) { return s.hostname == h.name; });
    if (used && !is_local_host(h.name, local, resolve_ipv4_address)) {
      in.remote_hosts.insert(h.name);
      where.remote_hosts.push_back(h.name);
    }
  }
  if (!o.network_interfaces.empty()) where.iface = o.network_interfaces.front();
  Result<StoreAddress> chosen = store_address(where, resolve_ipv4_address, source_address_towards);
  if (!chosen.is_ok()) return fail(chosen.status());
  if (!chosen->note.empty()) say(sink, chosen->note);
  const std::string address = chosen->address;
  const tcp::JobSecret secret = tcp::JobSecret::generate();
  // The store's thread reports refused connections; one write per line, as the console's.
  auto log = [](const std::string& line) { fmt::print(stderr, "korovodrun: {}\n", line); };
  Result<std::unique_ptr<tcp::StoreServer>> store = tcp::StoreServer::start(address, 0, secret, log);
  if (!store.is_ok()) return fail(store.status());
  in.rendezvous = {address, (*store)->port()};
  if (o.verbose) say(sink, fmt::format("rendezvous store at {}:{}", in.rendezvous.address, in.rendezvous.port));

  in.caller_env = caller_env;
  in.job_secret = secret.text();
  in.cwd = current_directory();
  in.grace_seconds = static_cast<int>(std::chrono::ceil<std::chrono::seconds>(supervision.grace).count());
  return supervise(plan_ranks(o, *slots, in), sink, supervision, watcher);
}

}  // namespace korovod::launcher
