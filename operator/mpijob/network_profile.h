// korovod extension: RDMA / RoCE / InfiniBand network profiles.
//
// An MPIJob selects a profile with the annotation korovod.io/network-profile
// (tcp | roce | infiniband | none); the operator's --network-profile flag (Helm value) sets the
// cluster-wide default and the cluster facts (HCA names, device plugin resource). Each
// annotation below overrides one field of the default. The profile injects NCCL / UCX / Open MPI
// settings into the launcher's and the workers' first container; the RDMA device resource and
// the IPC_LOCK capability (needed to pin memory for RDMA) go to pods that run ranks: the workers,
// and the launcher only with runLauncherAsWorker. Env vars the user set always win.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "mpijob/types.h"

namespace mpijob {

inline constexpr const char* kAnnotationNetworkProfile = "korovod.io/network-profile";
inline constexpr const char* kAnnotationRdmaDevices = "korovod.io/rdma-devices";
inline constexpr const char* kAnnotationRdmaResource = "korovod.io/rdma-resource";
inline constexpr const char* kAnnotationNcclIbHca = "korovod.io/nccl-ib-hca";
inline constexpr const char* kAnnotationNcclIbGidIndex = "korovod.io/nccl-ib-gid-index";
inline constexpr const char* kAnnotationNcclSocketIfname = "korovod.io/nccl-socket-ifname";
inline constexpr const char* kAnnotationNcclNetGdrLevel = "korovod.io/nccl-net-gdr-level";

enum class NetworkKind { None, Tcp, RoCE, InfiniBand };

struct NetworkProfile {
  NetworkKind kind = NetworkKind::None;
  std::string ib_hca;          // NCCL_IB_HCA, e.g. "mlx5_0,mlx5_1"
  std::string ib_gid_index;    // NCCL_IB_GID_INDEX; RoCE defaults to 3 (RoCE v2 over IPv4)
  std::string socket_ifname;   // NCCL_SOCKET_IFNAME (bootstrap / TCP interface), e.g. "eth0"
  std::string net_gdr_level;   // NCCL_NET_GDR_LEVEL; RDMA profiles default to PHB
  std::string rdma_devices;    // UCX_NET_DEVICES, e.g. "mlx5_0:1"
  std::string rdma_resource;   // device plugin resource, e.g. "rdma/hca: 1" ("name: qty")
};

// Throws std::invalid_argument for an unknown profile name.
NetworkKind parse_network_kind(const std::string& name);
// The job's profile: annotations over the operator default. Throws std::invalid_argument on a bad
// annotation value (the caller reports it as a validation error).
NetworkProfile resolve_network_profile(const MPIJob& job, const NetworkProfile& operator_default);

// The env vars a profile sets, in injection order (empty for None).
std::vector<std::pair<std::string, std::string>> network_env(const NetworkProfile& p,
                                                             MpiImplementation impl);

// Adds the profile to a container: env vars (user-set names win); with runs_ranks also the RDMA
// resource (request = limit, unless set) and capabilities.add IPC_LOCK.
void apply_network_profile(const NetworkProfile& p, MpiImplementation impl, bool runs_ranks,
                           kube::Object& container);

}  // namespace mpijob
