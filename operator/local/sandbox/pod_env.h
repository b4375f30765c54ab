// The environment of one container as the kubelet would build it: env[].value with $(VAR)
// expansion, valueFrom.fieldRef (metadata.name/namespace/uid/labels['k']/annotations['k'],
// spec.nodeName, spec.serviceAccountName, status.podIP/hostIP/podIPs), configMapKeyRef and
// secretKeyRef (read through kube::Client), and envFrom (configMapRef / secretRef, prefix).
// resourceFieldRef is not supported (the value stays empty; documented in
// operator/local/README.md).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kube/client.h"

namespace local {

using EnvList = std::vector<std::pair<std::string, std::string>>;  // in order, later wins

// Reads a key of a ConfigMap / Secret; nullopt when the object or the key is absent.
struct EnvSources {
  std::function<std::optional<std::string>(const std::string& name, const std::string& key)>
      config_map_key;
  std::function<std::optional<std::string>(const std::string& name, const std::string& key)>
      secret_key;
  std::function<kube::Object(const std::string& name)> config_map_data;  // {} when absent
  std::function<kube::Object(const std::string& name)> secret_data;      // decoded, {} absent
};

// Sources that read through a client in the pod's namespace (Secret data is base64-decoded).
EnvSources client_env_sources(kube::Client& client, const std::string& ns);

// The value of a fieldRef path of the pod; throws std::invalid_argument for unsupported paths.
std::string pod_field(const kube::Object& pod, const std::string& path);

// $(VAR) expansion as Kubernetes does it: $$ -> $, unknown references stay as written.
std::string expand_references(const std::string& s, const EnvList& env);

// env[] and envFrom[] of the container, resolved. A missing optional ref is skipped; a missing
// required one throws std::runtime_error (the kubelet's CreateContainerConfigError).
EnvList resolve_container_env(const kube::Object& pod, const kube::Object& container,
                              const EnvSources& sources);

// Sets or replaces name in env (keeps the position of an existing entry).
void set_env(EnvList& env, const std::string& name, const std::string& value);
std::optional<std::string> get_env(const EnvList& env, const std::string& name);

std::string base64_decode(const std::string& in);

// j[key] when j is an object that has it, else a shared empty object (iterates as nothing).
const kube::Object& field(const kube::Object& j, const char* key);

}  // namespace local
