#include "mpijob/network_profile.h"

#include <algorithm>
#include <stdexcept>

namespace mpijob {
namespace {

using EnvList = std::vector<std::pair<std::string, std::string>>;

void add_if_set(EnvList& env, const char* name, const std::string& value) {
  if (!value.empty()) env.emplace_back(name, value);
}

void override_from(const MPIJob& job, const char* annotation, std::string& field) {
  std::string v = job.annotation(annotation);
  if (!v.empty()) field = v;
}

// "rdma/hca: 1", "rdma/hca=1" or "rdma/hca" (one device).
std::pair<std::string, std::string> parse_resource(const std::string& spec) {
  auto trim = [](std::string s) {
    const char* ws = " \t";
    s.erase(0, s.find_first_not_of(ws));
    s.erase(s.find_last_not_of(ws) + 1);
    return s;
  };
  auto sep = spec.find_first_of(":=");
  std::string name = trim(spec.substr(0, sep));
  std::string qty = sep == std::string::npos ? "1" : trim(spec.substr(sep + 1));
  if (name.empty() || qty.empty()) {
    throw std::invalid_argument("rdma resource \"" + spec + "\": want \"<name>: <count>\"");
  }
  return {name, qty};
}

bool has_env(const kube::Object& container, const std::string& name) {
  const auto& env = child(container, "env");
  return std::any_of(env.begin(), env.end(), [&](const kube::Object& e) {
    return member<std::string>(e, "name").value_or("") == name;
  });
}

void add_rdma_resource(const std::string& spec, kube::Object& container) {
  auto [name, qty] = parse_resource(spec);
  auto& resources = container["resources"];
  for (const char* kind : {"requests", "limits"}) {
    auto& list = resources[kind];
    if (!list.contains(name)) list[name] = qty;  // extended resources need request == limit
  }
}

void add_ipc_lock(kube::Object& container) {
  auto& add = container["securityContext"]["capabilities"]["add"];
  if (!add.is_array()) add = kube::Object::array();
  if (std::find(add.begin(), add.end(), "IPC_LOCK") == add.end()) add.push_back("IPC_LOCK");
}

EnvList rdma_env(const NetworkProfile& p, MpiImplementation impl) {
  EnvList env;
  env.emplace_back("NCCL_IB_DISABLE", "0");
  add_if_set(env, "NCCL_IB_HCA", p.ib_hca);
  const std::string gid =
      p.ib_gid_index.empty() && p.kind == NetworkKind::RoCE ? "3" : p.ib_gid_index;
  add_if_set(env, "NCCL_IB_GID_INDEX", gid);
  add_if_set(env, "NCCL_SOCKET_IFNAME", p.socket_ifname);
  env.emplace_back("NCCL_NET_GDR_LEVEL", p.net_gdr_level.empty() ? "PHB" : p.net_gdr_level);
  add_if_set(env, "UCX_NET_DEVICES", p.rdma_devices);
  env.emplace_back("UCX_TLS", "rc,ud,sm,self");
  if (impl == MpiImplementation::OpenMPI) {
    // UCX carries MPI point-to-point over the HCA. The legacy openib BTL would open the same
    // device and compete with UCX (it is gone in Open MPI 5), so it is excluded; vader (shared
    // memory) stays, it serves same-node ranks for BTL-based components such as osc and coll.
    env.emplace_back("OMPI_MCA_pml", "ucx");
    env.emplace_back("OMPI_MCA_btl", "^openib");
  }
  return env;
}

EnvList tcp_env(const NetworkProfile& p, MpiImplementation impl) {
  EnvList env;
  env.emplace_back("NCCL_IB_DISABLE", "1");
  add_if_set(env, "NCCL_SOCKET_IFNAME", p.socket_ifname);
  if (impl == MpiImplementation::OpenMPI) {
    env.emplace_back("OMPI_MCA_pml", "ob1");
    env.emplace_back("OMPI_MCA_btl", "^openib");
    add_if_set(env, "OMPI_MCA_btl_tcp_if_include", p.socket_ifname);
  }
  return env;
}

// mpirun forwards OMPI_MCA_* to the ranks but not other variables, and ranks started through
// sshd do not see the worker container's env: mca_base_env_list makes Open MPI forward them.
void add_forward_list(EnvList& env) {
  std::string names;
  for (const auto& [name, value] : env) {
    if (name.rfind("OMPI_MCA_", 0) == 0) continue;
    names += (names.empty() ? "" : ";") + name;
  }
  if (!names.empty()) env.emplace_back("OMPI_MCA_mca_base_env_list", names);
}

}  // namespace

NetworkKind parse_network_kind(const std::string& name) {
  if (name.empty() || name == "none") return NetworkKind::None;
  if (name == "tcp") return NetworkKind::Tcp;
  if (name == "roce") return NetworkKind::RoCE;
  if (name == "infiniband" || name == "ib") return NetworkKind::InfiniBand;
  throw std::invalid_argument("unknown network profile \"" + name +
                              "\" (want none, tcp, roce or infiniband)");
}

NetworkProfile resolve_network_profile(const MPIJob& job, const NetworkProfile& operator_default) {
  NetworkProfile p = operator_default;
  const std::string kind = job.annotation(kAnnotationNetworkProfile);
  if (!kind.empty()) p.kind = parse_network_kind(kind);
  override_from(job, kAnnotationNcclIbHca, p.ib_hca);
  override_from(job, kAnnotationNcclIbGidIndex, p.ib_gid_index);
  override_from(job, kAnnotationNcclSocketIfname, p.socket_ifname);
  override_from(job, kAnnotationNcclNetGdrLevel, p.net_gdr_level);
  override_from(job, kAnnotationRdmaDevices, p.rdma_devices);
  override_from(job, kAnnotationRdmaResource, p.rdma_resource);
  if (!p.rdma_resource.empty()) parse_resource(p.rdma_resource);  // reject bad values early
  return p;
}

std::vector<std::pair<std::string, std::string>> network_env(const NetworkProfile& p,
                                                             MpiImplementation impl) {
  EnvList env;
  if (p.kind == NetworkKind::Tcp) env = tcp_env(p, impl);
  if (p.kind == NetworkKind::RoCE || p.kind == NetworkKind::InfiniBand) env = rdma_env(p, impl);
  if (impl == MpiImplementation::OpenMPI) add_forward_list(env);
  return env;
}

void apply_network_profile(const NetworkProfile& p, MpiImplementation impl, bool runs_ranks,
                           kube::Object& container) {
  if (p.kind == NetworkKind::None) return;
  for (const auto& [name, value] : network_env(p, impl)) {
    if (has_env(container, name)) continue;
    container["env"].push_back({{"name", name}, {"value", value}});
  }
  const bool rdma = p.kind == NetworkKind::RoCE || p.kind == NetworkKind::InfiniBand;
  if (!rdma || !runs_ranks) return;
  if (!p.rdma_resource.empty()) add_rdma_resource(p.rdma_resource, container);
  add_ipc_lock(container);
}

}  // namespace mpijob
