#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>

#include "algorithms/executor.h"
#include "korovod/tcp.h"
#include "transport/assembly/data_planes.h"
#include "transport/tcp/elastic.h"
#include "transport/tcp/tcp_provider.h"
#include "transport/tcp/tcp_transport.h"

namespace korovod {
namespace {

const std::string* find_env(const EnvMap& env, std::initializer_list<const char*> names, std::string* which) {
  for (const char* n : names) {
    auto it = env.find(n);
    if (it != env.end() && !it->second.empty()) {
      *which = n;
      return &it->second;
    }
  }
  return nullptr;
}

template <typename T>
Status read_required(const EnvMap& env, std::initializer_list<const char*> names, T& out, T min_value) {
  std::string which;
  const std::string* v = find_env(env, names, &which);
  if (!v) return Status::invalid_argument(fmt::format("{} is not set (starting without MPI)", *names.begin()));
  auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
  if (ec != std::errc() || end != v->data() + v->size() || out < min_value) {
    return Status::invalid_argument(fmt::format("{}={:?}: expected a number >= {}", which, *v, min_value));
  }
  return Status::ok();
}

bool truthy(std::string v) {
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
  return v == "1" || v == "true" || v == "yes" || v == "on";
}

// KOROVOD_ELASTIC_WORKER_ID and KOROVOD_ELASTIC_TIMEOUT into `w` (elastic mode only).
Status read_elastic(const EnvMap& env, TcpWorldConfig& w) {
  std::string which;
  const std::string* id = find_env(env, {"KOROVOD_ELASTIC_WORKER_ID"}, &which);
  if (!id) {
    return Status::invalid_argument(
        "KOROVOD_ELASTIC=1 but KOROVOD_ELASTIC_WORKER_ID is not set (the elastic driver, korovodrun --min-np/--max-np, "
        "sets it for every worker it starts)");
  }
  if (id->find_first_of(" /\n") != std::string::npos) {
    return Status::invalid_argument(fmt::format("KOROVOD_ELASTIC_WORKER_ID={:?}: no spaces or slashes", *id));
  }
  w.elastic = true;
  w.elastic_worker_id = *id;
  w.server = RendezvousServer::kExternal;  // the driver's store outlives every round
  if (find_env(env, {"KOROVOD_ELASTIC_TIMEOUT", "HOROVOD_ELASTIC_TIMEOUT"}, &which)) {
    KOROVOD_RETURN_IF_ERROR(read_required(env, {"KOROVOD_ELASTIC_TIMEOUT", "HOROVOD_ELASTIC_TIMEOUT"},
                                          w.elastic_timeout_seconds, 0.001));
  }
  return Status::ok();
}

}  // namespace

bool elastic_mode(const EnvMap& env) {
  std::string which;
  const std::string* v = find_env(env, {"KOROVOD_ELASTIC", "HOROVOD_ELASTIC"}, &which);
  return v && truthy(*v);
}

bool tcp_rendezvous_configured(const EnvMap& env) {
  std::string which;
  return find_env(env, {"KOROVOD_RENDEZVOUS_ADDR", "HOROVOD_GLOO_RENDEZVOUS_ADDR"}, &which) != nullptr;
}

Result<TcpWorldConfig> parse_tcp_world(const EnvMap& env) {
  TcpWorldConfig w;
  std::string which;
  const std::string* addr = find_env(env, {"KOROVOD_RENDEZVOUS_ADDR", "HOROVOD_GLOO_RENDEZVOUS_ADDR"}, &which);
  if (!addr) return Status::invalid_argument("KOROVOD_RENDEZVOUS_ADDR is not set (starting without MPI)");
  w.rendezvous_addr = *addr;
  KOROVOD_RETURN_IF_ERROR(read_required(env, {"KOROVOD_RENDEZVOUS_PORT", "HOROVOD_GLOO_RENDEZVOUS_PORT"},
                                        w.rendezvous_port, 1));
  if (elastic_mode(env)) {
    KOROVOD_RETURN_IF_ERROR(read_elastic(env, w));
    w.size = 1;  // placeholders until the driver's round assigns them
    w.rank = 0;
  } else {
    KOROVOD_RETURN_IF_ERROR(read_required(env, {"KOROVOD_SIZE", "HOROVOD_SIZE"}, w.size, 1));
    KOROVOD_RETURN_IF_ERROR(read_required(env, {"KOROVOD_RANK", "HOROVOD_RANK"}, w.rank, 0));
  }
  if (w.rank >= w.size || w.rendezvous_port > 65535) {
    return Status::invalid_argument(fmt::format("rank {} of {} at port {}: out of range", w.rank, w.size,
                                                w.rendezvous_port));
  }
  if (const std::string* server = find_env(env, {"KOROVOD_RENDEZVOUS_SERVER"}, &which)) {
    if (*server == "external") {
      w.server = RendezvousServer::kExternal;
    } else if (*server != "rank0") {
      return Status::invalid_argument(
          fmt::format("KOROVOD_RENDEZVOUS_SERVER={:?}: expected \"rank0\" or \"external\"", *server));
    }
  }
  if (find_env(env, {"KOROVOD_START_TIMEOUT", "HOROVOD_START_TIMEOUT"}, &which)) {
    KOROVOD_RETURN_IF_ERROR(read_required(env, {"KOROVOD_START_TIMEOUT", "HOROVOD_START_TIMEOUT"},
                                          w.start_timeout_seconds, 0.001));
  }
  Result<tcp::JobSecret> secret = tcp::job_secret_from_env(env);
  if (!secret.is_ok()) return secret.status();
  w.job_secret = secret->text();
  return w;
}

Result<RuntimeOptions> tcp_runtime_options(Config config, const TcpWorldConfig& world,
                                           std::vector<std::vector<int>> process_sets, std::shared_ptr<Env> env) {
  // Before the rendezvous: no peer waits there for a start this Config already dooms.
  KOROVOD_RETURN_IF_ERROR(check_data_planes(config, ControlPlaneKind::kTcp));
  if (!env) env = std::make_shared<SystemEnv>();
  const HostIdentity host = env->host();
  // KOROVOD_HOST_ID and KOROVOD_HOSTNAME are read by parse_config only; a world that names
  // its own (a test posing as several hosts) keeps them.
  TcpWorldConfig named = world;
  if (named.host_id.empty()) named.host_id = config.host_id;
  if (named.hostname.empty()) named.hostname = config.hostname;
  Result<std::shared_ptr<tcp::TcpTransportProvider>> transport =
      tcp::TcpTransportProvider::create(named, config.tcp_iface, host, tcp::warning_log(config, world.rank), env);
  if (!transport.is_ok()) return transport.status();
  RuntimeOptions options;
  options.config = std::move(config);
  options.env = std::move(env);
  options.transport = *transport;
  Result<std::vector<std::shared_ptr<BackendProvider>>> backends =
      build_data_planes(options.config, ControlPlane::over_tcp(*transport, host, options.env));
  if (!backends.is_ok()) return backends.status();
  options.backends = std::move(backends).value();
  options.process_sets = std::move(process_sets);
  options.make_executor = make_executor;  // the collectives' executor (algorithms/executor.h)
  return options;
}

Result<std::unique_ptr<Runtime>> start_tcp_runtime(Config config, const TcpWorldConfig& world,
                                                   std::vector<std::vector<int>> process_sets) {
  Result<RuntimeOptions> options = tcp_runtime_options(std::move(config), world, std::move(process_sets));
  if (!options.is_ok()) return options.status();
  // Kept to tell the driver this worker's init completed (elastic mode).
  auto transport = std::static_pointer_cast<tcp::TcpTransportProvider>(options->transport);
  Result<std::unique_ptr<Runtime>> runtime = Runtime::create(std::move(options).value());
  if (!runtime.is_ok() || !world.elastic) return runtime;
  Status ready = transport->mark_elastic_ready(world.elastic_worker_id);
  if (!ready.is_ok()) {
    (void)(*runtime)->shutdown();
    return ready;
  }
  return runtime;
}

Result<std::unique_ptr<Runtime>> init_tcp_runtime(std::vector<std::vector<int>> process_sets) {
  const EnvMap env = process_environment();
  Result<Config> config = parse_config(env);
  if (!config.is_ok()) return config.status();
  Result<TcpWorldConfig> world = parse_tcp_world(env);
  if (!world.is_ok()) return world.status();
  return start_tcp_runtime(std::move(config).value(), *world, std::move(process_sets));
}

Result<ElasticHostsUpdate> read_elastic_hosts_version(const EnvMap& env) {
  if (!elastic_mode(env)) {
    return Status::precondition("the hosts version exists in elastic mode only (KOROVOD_ELASTIC is not set)");
  }
  Result<TcpWorldConfig> world = parse_tcp_world(env);
  if (!world.is_ok()) return world.status();
  Result<tcp::HostsVersion> v = tcp::read_hosts_version_at(*world);
  if (!v.is_ok()) return v.status();
  return ElasticHostsUpdate{v->version, v->kind};
}

Result<int64_t> read_elastic_published_round(const EnvMap& env) {
  if (!elastic_mode(env)) {
    return Status::precondition("the published round exists in elastic mode only (KOROVOD_ELASTIC is not set)");
  }
  Result<TcpWorldConfig> world = parse_tcp_world(env);
  if (!world.is_ok()) return world.status();
  return tcp::read_published_round_at(*world);
}

Result<std::unique_ptr<Runtime>> init_solo_runtime(std::vector<std::vector<int>> process_sets) {
  Result<Config> config = parse_config(process_environment());
  if (!config.is_ok()) return config.status();
  TcpWorldConfig world;
  world.rendezvous_addr = "127.0.0.1";
  world.rendezvous_port = 0;  // ephemeral: nothing to collide with another job on this host
  world.server_listen_host = "127.0.0.1";
  world.rank = 0;
  world.size = 1;
  world.start_timeout_seconds = 10;
  // Nobody else takes part, so nobody else needs the secret: other processes of this host that
  // connect to the loopback ports are refused.
  world.job_secret = tcp::JobSecret::generate().text();
  // Loopback for the control sockets too: a process started without a launcher has no peers, and
  // the hostname's address may not exist or may be unreachable (a laptop off the network).
  config->tcp_iface = "lo";
  Result<RuntimeOptions> options = tcp_runtime_options(std::move(config).value(), world, std::move(process_sets));
  if (!options.is_ok()) return options.status();
  return Runtime::create(std::move(options).value());
}

}  // namespace korovod
