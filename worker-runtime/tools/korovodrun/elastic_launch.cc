#include "elastic_launch.h"

#include <fmt/format.h>
#include <unistd.h>

#include <map>
#include <random>

#include "launch/elastic_driver.h"
#include "job_signals.h"
#include "local_host.h"
#include "remote_command.h"
#include "script_discovery.h"
#include "tcp_launch.h"
#include "transport/tcp/store.h"
#include "worker_pool.h"

namespace korovod::launcher {

EnvMap elastic_worker_env(const WorkerSlot& w, const Rendezvous& rendezvous, int timeout_seconds) {
  EnvMap env;
  env["KOROVOD_ELASTIC"] = env["HOROVOD_ELASTIC"] = "1";
  env["KOROVOD_ELASTIC_WORKER_ID"] = w.id();
  env["KOROVOD_HOSTNAME"] = env["HOROVOD_HOSTNAME"] = env["KOROVOD_HOST_ID"] = w.host;
  env["KOROVOD_RENDEZVOUS_ADDR"] = rendezvous.address;
  env["KOROVOD_RENDEZVOUS_PORT"] = std::to_string(rendezvous.port);
  env["KOROVOD_RENDEZVOUS_SERVER"] = "external";
  env["KOROVOD_ELASTIC_TIMEOUT"] = env["HOROVOD_ELASTIC_TIMEOUT"] = std::to_string(timeout_seconds);
  env["PYTHONUNBUFFERED"] = "1";
  return env;
}

int elastic_timeout_seconds(const LaunchOptions& o, const EnvMap& env) {
  if (o.elastic_timeout_seconds) return *o.elastic_timeout_seconds;
  for (const char* name : {"KOROVOD_ELASTIC_TIMEOUT", "HOROVOD_ELASTIC_TIMEOUT"}) {
    auto it = env.find(name);
    if (it != env.end() && !it->second.empty()) {
      try {
        const int s = std::stoi(it->second);
        if (s > 0) return s;
      } catch (const std::exception&) {  // not a number: the default, as an unset variable
      }
    }
  }
  return 600;
}

namespace {

std::string current_directory() {
  char buf[4096];
  return getcwd(buf, sizeof buf) ? std::string(buf) : std::string(".");
}

// The driver's world: the discovery, this job's store (through a client of korovodrun's own
// server), the worker processes.
class LiveWorld : public ElasticWorld {
 public:
  LiveWorld(const LaunchOptions& o, HostDiscovery& discovery, tcp::StoreClient& store, WorkerPool& pool,
            OutputSink& sink)
      : options_(o), discovery_(discovery), store_(store), pool_(pool), sink_(sink), local_(discover_local_host()) {}

  RankPlanInputs plan;  // the environment, cwd, store and secret every worker starts with
  int timeout_seconds = 600;

  Clock::time_point now() override { return Clock::now(); }
  Result<std::vector<HostSlots>> discover() override { return discovery_.discover(); }
  Status set_key(const std::string& key, const std::string& value) override { return store_.set(key, value); }
  Result<int64_t> add_to_key(const std::string& key, int64_t delta) override { return store_.add(key, delta); }
  Result<std::optional<std::string>> read_key(const std::string& key) override { return store_.try_get(key); }
  void stop_worker(const WorkerSlot& w) override { pool_.stop(w); }
  void say(const std::string& line) override { launcher::say(sink_, line); }

  Status start_worker(const WorkerSlot& w) override {
    auto known = remote_.find(w.host);
    if (known == remote_.end()) known = remote_.emplace(w.host, !is_local_host(w.host, local_, resolve_ipv4_address)).first;
    const bool remote = known->second;
    const bool secret = !plan.job_secret.empty();
    EnvMap env = merged(merged(plan.caller_env, tuning_env(options_)), elastic_worker_env(w, plan.rendezvous, timeout_seconds));
    ProcessSpec spec;
    if (remote) {
      const SshOptions ssh = ssh_options_for(options_, plan.caller_env);
      spec.argv = ssh_command(w.host, ssh, remote_rank_script(options_.command, env, plan.cwd, plan.grace_seconds, secret));
      spec.env = plan.caller_env;
      spec.stdin_pipe = true;
      if (secret) spec.stdin_data = plan.job_secret + "\n";
    } else {
      if (secret) env["KOROVOD_JOB_SECRET"] = plan.job_secret;
      spec.argv = options_.command;
      spec.env = env;
    }
    if (options_.verbose) say(fmt::format("starting worker {}{}", w.id(), remote ? " over ssh" : ""));
    return pool_.start(w, spec, remote);
  }

  bool any_remote(const std::vector<HostSlots>& hosts) {
    for (const HostSlots& h : hosts) {
      if (!is_local_host(h.name, local_, resolve_ipv4_address)) return true;
    }
    return false;
  }

 private:
  const LaunchOptions& options_;
  HostDiscovery& discovery_;
  tcp::StoreClient& store_;
  WorkerPool& pool_;
  OutputSink& sink_;
  LocalHost local_;
  std::map<std::string, bool> remote_;
};

std::unique_ptr<HostDiscovery> make_discovery(const LaunchOptions& o, const EnvMap& env, Status& error) {
  if (!o.host_discovery_script.empty()) return std::make_unique<ScriptDiscovery>(o.host_discovery_script, o.slots_per_host, env);
  Result<std::vector<HostSlots>> hosts = hosts_from_options(o);
  if (!hosts.is_ok()) {
    error = hosts.status();
    return nullptr;
  }
  return std::make_unique<FixedDiscovery>(*hosts);
}

// The store listens where every host reaches it: decided from the first discovered hosts
// (127.0.0.1 when they are all this machine, unless --network-interface names another; see
// store_address for hosts whose names do not resolve yet and for a first list that is empty).
Result<StoreAddress> elastic_store_address(const LaunchOptions& o, HostDiscovery& discovery) {
  Result<std::vector<HostSlots>> first = discovery.discover();
  if (!first.is_ok()) return first.status();  // horovodrun: a failing first discovery is fatal
  const LocalHost local = discover_local_host();
  StoreAddressInputs where;
  for (const HostSlots& h : *first) {
    if (!is_local_host(h.name, local, resolve_ipv4_address)) where.remote_hosts.push_back(h.name);
  }
  where.hosts_unknown = first->empty();
  if (!o.network_interfaces.empty()) where.iface = o.network_interfaces.front();
  return store_address(where, resolve_ipv4_address, source_address_towards);
}

int drive(ElasticDriver& driver, WorkerPool& pool, OutputSink& sink) {
  Result<JobSignalFd> signals = JobSignalFd::open();
  if (!signals.is_ok()) {
    say(sink, signals.status().message());
    return 1;
  }
  std::optional<int> stop_signal;
  bool stopping = false;
  for (;;) {
    if (!stop_signal) driver.tick();
    if (driver.outcome() && !stopping) {
      pool.stop_all();
      stopping = true;
    }
    if (stopping && pool.idle()) break;
    const auto until = std::chrono::ceil<std::chrono::milliseconds>(driver.next_wakeup() - std::chrono::steady_clock::now());
    const auto timeout = stopping ? std::chrono::milliseconds(100) : std::clamp(until, std::chrono::milliseconds(0), std::chrono::milliseconds(1000));
    WorkerPool::Events events = pool.wait(*signals, timeout);
    for (int sig : events.signals) {
      const char* abbrev = sigabbrev_np(sig);
      const std::string name = abbrev ? fmt::format("SIG{}", abbrev) : fmt::format("signal {}", sig);
      if (!stop_signal) {
        stop_signal = sig;
        say(sink, fmt::format("got {}: ending every worker", name));
        pool.stop_all();
        stopping = true;
      } else {
        say(sink, fmt::format("got {} while ending the job: killing every worker now", name));
        pool.kill_all();
      }
    }
    for (const WorkerPool::Exit& e : events.exits) driver.on_worker_exit(e.worker, e.exit_code);
  }
  if (stop_signal) return 128 + *stop_signal;
  return driver.outcome()->exit_code;
}

}  // namespace

int run_elastic_job(const LaunchOptions& o, const EnvMap& caller_env, OutputSink& sink,
                    const SupervisorOptions& supervision, GroupWatcher* watcher) {
  auto fail = [&sink](const Status& s) {
    say(sink, s.message());
    return 1;
  };
  std::optional<CooldownRange> cooldown;
  if (!o.blacklist_cooldown_range.empty()) {
    cooldown = CooldownRange{o.blacklist_cooldown_range[0], o.blacklist_cooldown_range[1]};
    if (Status s = check_cooldown_range(*cooldown); !s.is_ok()) return fail(s);
  }
  Status made;
  std::unique_ptr<HostDiscovery> discovery = make_discovery(o, caller_env, made);
  if (!discovery) return fail(made);
  Result<StoreAddress> chosen = elastic_store_address(o, *discovery);
  if (!chosen.is_ok()) return fail(chosen.status());
  if (!chosen->note.empty()) say(sink, chosen->note);
  const std::string address = chosen->address;
  const tcp::JobSecret secret = tcp::JobSecret::generate();
  auto log = [](const std::string& line) { fmt::print(stderr, "korovodrun: {}\n", line); };
  Result<std::unique_ptr<tcp::StoreServer>> server = tcp::StoreServer::start(address, 0, secret, log);
  if (!server.is_ok()) return fail(server.status());
  const Rendezvous rendezvous{address, (*server)->port()};
  Result<std::unique_ptr<tcp::StoreClient>> store =
      tcp::StoreClient::connect({rendezvous.address, rendezvous.port}, 30.0, "korovodrun", secret);
  if (!store.is_ok()) return fail(store.status());
  if (o.verbose) say(sink, fmt::format("rendezvous store at {}:{}", rendezvous.address, rendezvous.port));

  WorkerPool pool(sink, supervision, watcher);
  LiveWorld world(o, *discovery, **store, pool, sink);
  world.plan.caller_env = caller_env;
  world.plan.cwd = current_directory();
  world.plan.rendezvous = rendezvous;
  world.plan.job_secret = secret.text();
  world.plan.grace_seconds = static_cast<int>(std::chrono::ceil<std::chrono::seconds>(supervision.grace).count());
  world.timeout_seconds = elastic_timeout_seconds(o, caller_env);

  ElasticOptions options;
  options.start_np = o.num_proc;
  options.min_np = o.min_np.value_or(o.num_proc);
  options.max_np = o.max_np;
  options.elastic_timeout = std::chrono::seconds(world.timeout_seconds);
  options.reset_limit = o.reset_limit;
  options.verbose = o.verbose;
  std::mt19937_64 random{std::random_device{}()};
  HostBlacklist blacklist(o.blacklist_after_failures, cooldown,
                          [&random] { return std::uniform_real_distribution<double>(0.0, 1.0)(random); });
  ElasticDriver driver(options, std::move(blacklist), world);
  return drive(driver, pool, sink);
}

}  // namespace korovod::launcher
