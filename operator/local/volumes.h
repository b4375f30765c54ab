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

#include "local/pod_env.h"

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

// The container's volumeMounts (subPath supported) against materialized volumes.
std::vector<Mount> container_mounts(
    const kube::Object& container,
    const std::vector<std::pair<std::string, std::filesystem::path>>& volumes);

}  // namespace local
