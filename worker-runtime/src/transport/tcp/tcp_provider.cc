#include "transport/tcp/tcp_provider.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <sstream>

#include "core/logger.h"
#include "transport/common/host_groups.h"
#include "transport/shm/shm_provider.h"
#include "transport/tcp/address.h"
#include "transport/common/hierarchical_backend.h"
#include "transport/tcp/mesh_setup.h"
#include "transport/tcp/tcp_backend.h"

namespace korovod::tcp {
namespace {

// Every member reports its status; all take the same branch (transport/common/host_groups.h).
Result<std::vector<std::string>> agree(ControlChannel& ctl, const Status& mine, const std::string& payload,
                                       const std::vector<int>& global_ranks) {
  return korovod::agree(ctl, mine, payload, "TCP backend setup", global_ranks);
}

// The secret the set's sockets prove: the configured one, or (share_secret) a fresh one from the
// set's rank 0 over the control channel. Collective over `ctl` in the second case.
Result<MeshAuth> set_auth(ControlChannel& ctl, const TcpOptions& options) {
  MeshAuth auth = options.auth;
  if (!auth.clock) auth.clock = options.env;  // the setup's bounds on the collectives' clock
  if (!options.share_secret) return auth;
  std::string text = ctl.rank() == 0 ? JobSecret::generate().text() : std::string();
  KOROVOD_RETURN_IF_ERROR(ctl.broadcast_from_root(text));
  Result<JobSecret> secret = JobSecret::from_text(text, "the process set's rank 0");
  if (!secret.is_ok()) return secret.status();
  auth.secret = std::move(secret).value();
  return auth;
}

}  // namespace

AuthLog warning_log(const Config& config, int rank) {
  Logger logger(config.log_level, config.log_hide_time, nullptr);
  logger.set_rank(rank);
  return [logger](const std::string& line) { logger.write(LogLevel::kWarning, line); };
}


Result<std::unique_ptr<Backend>> TcpBackendProvider::create_flat(ControlChannel& ctl, const std::vector<int>& global_ranks,
                                                                 int set_id) {
  Result<MeshAuth> auth = set_auth(ctl, options_);
  if (!auth.is_ok()) return auth.status();
  Result<std::string> address = choose_listen_address(options_.iface);
  Result<os::Fd> listener = address.is_ok() ? listen_on(*address, 0, SocketOptions{options_.socket_buffer_bytes},
                                                    static_cast<int>(global_ranks.size()) + 8)
                                        : Result<os::Fd>(address.status());
  const std::string mine = listener.is_ok() ? fmt::format("{}:{}", *address, local_port(*listener)) : "";
  Result<std::vector<std::string>> endpoints = agree(ctl, listener.status(), mine, global_ranks);
  if (!endpoints.is_ok()) return endpoints.status();

  Result<std::vector<os::Fd>> peers = connect_mesh(*listener, *endpoints, ctl.rank(), set_id,
                                               SocketOptions{options_.socket_buffer_bytes}, options_.timeout_seconds,
                                               global_ranks, *auth);
  Result<std::vector<std::string>> done = agree(ctl, peers.status(), "connected", global_ranks);
  if (!done.is_ok()) return done.status();
  std::vector<std::string> names;
  for (int r : global_ranks) names.push_back(transport_->rank_name(r));
  auto mesh = std::make_unique<Mesh>(ctl.rank(), std::move(peers).value(), global_ranks, options_.timeout_seconds,
                                     "TCP backend", std::move(names), options_.family, options_.env);
  return std::unique_ptr<Backend>(std::make_unique<TcpBackend>(std::move(mesh), options_.segment_bytes));
}

Result<std::unique_ptr<Backend>> TcpBackendProvider::create_hierarchical(const HostGroups& groups, int set_id,
                                                                         std::unique_ptr<Backend> flat) {
  shm::ShmBackendProvider shm_provider(transport_, options_.shm_geometry, /*forced=*/true, options_.machine_id,
                                       options_.env);
  Result<std::unique_ptr<Backend>> local = shm_provider.create_backend(groups.local, set_id);
  if (!local.is_ok()) return local.status();
  Result<std::unique_ptr<ControlChannel>> cross_ctl = transport_->create_control(groups.cross, set_id);
  if (!cross_ctl.is_ok()) return cross_ctl.status();
  Result<std::unique_ptr<Backend>> cross = create_flat(**cross_ctl, groups.cross, set_id);
  if (!cross.is_ok()) return cross.status();
  return std::unique_ptr<Backend>(std::make_unique<HierarchicalBackend>(std::move(flat), std::move(local).value(),
                                                                        std::move(cross).value()));
}

Result<std::unique_ptr<Backend>> TcpBackendProvider::create_backend(const std::vector<int>& global_ranks, int set_id) {
  Result<std::unique_ptr<ControlChannel>> control = transport_->create_control(global_ranks, set_id);
  if (!control.is_ok()) return control.status();
  ControlChannel& ctl = **control;
  Result<std::unique_ptr<Backend>> flat = create_flat(ctl, global_ranks, set_id);
  if (!flat.is_ok() || !options_.hierarchical_allreduce) return flat;

  // Every member learns every member's host, so all take the same branch below.
  if (options_.host_id.empty() || options_.machine_id.empty()) {
    return Status::precondition("the hierarchical TCP plane needs TcpOptions::host_id and machine_id (Env::host)");
  }
  Result<std::vector<std::string>> hosts = agree(ctl, Status::ok(), options_.host_id, global_ranks);
  if (!hosts.is_ok()) return hosts.status();
  const std::optional<HostGroups> groups = host_groups(*hosts, global_ranks, ctl.rank());
  if (!groups) return flat;
  Result<std::unique_ptr<Backend>> hier = create_hierarchical(*groups, set_id, std::move(flat).value());
  Result<std::vector<std::string>> done = agree(ctl, hier.status(), "hierarchical", global_ranks);
  if (!done.is_ok()) return done.status();
  return hier;
}

}  // namespace korovod::tcp
