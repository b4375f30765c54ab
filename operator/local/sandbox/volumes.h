// Materializes a pod's volumes as directories under the pod's work directory, as the kubelet
// does on a node: configMap and secret (items key->path with mode, defaultMode, optional),
// projected (configMap / secret / downwardAPI sources; a serviceAccountToken is an empty file,
// local mode requests no tokens), downwardAPI (fieldRef items),
// emptyDir (an empty directory), hostPath (the host path itself). Others throw.
// Each container's volumeMounts then become (host dir, mount path) pairs for the sandbox.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "local/sandbox/pod_env.h"

namespace local {

struct Mount {
  std::filesystem::path host_path;  // what to bind
  std::string mount_path;           // where the container sees it
  bool read_only = false;
  bool operator==(const Mount&) const = default;
};

// Writes every volume of pod.spec.volumes under pod_dir/volumes/<name>; returns name -> dir.
std::vector<std::pair<std::string, std::filesystem::path>> materialize_volumes(
    const kube::Object& pod, const EnvSources& sources, const std::filesystem::path& pod_dir);

// Rewrites the pod's configMap, secret and projected volumes whose source changed (what the
// kubelet does for a running pod; subPath mounts keep the old file, as on a node). Files are
// replaced by rename; a source that is gone leaves the volume as it was.
void refresh_volumes(const kube::Object& pod, const EnvSources& sources,
                     const std::filesystem::path& pod_dir);

// What a kubelet does to a pod's volumes for a container that runs as another user than the
// one that wrote them (pods as containers, docker_run.h): emptyDir directories are made 0777,
// and with securityContext.fsGroup every file and directory of its secret, configMap,
// projected, downwardAPI and emptyDir volumes gets group fsGroup and group read (and write
// and setgid on emptyDir directories). Run again after refresh_volumes, whose new files are
// made by this process. Throws std::runtime_error when the group cannot be changed (needs
// root or membership in fsGroup).
void apply_volume_ownership(const kube::Object& pod, const std::filesystem::path& pod_dir,
                            bool refresh);

// The container's volumeMounts (subPath supported) against materialized volumes.
std::vector<Mount> container_mounts(
    const kube::Object& container,
    const std::vector<std::pair<std::string, std::filesystem::path>>& volumes);

}  // namespace local
