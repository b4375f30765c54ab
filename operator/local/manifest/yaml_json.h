// YAML manifests to the JSON objects the API takes (yaml-cpp). Plain scalars get YAML 1.1 /
// Kubernetes types (int, float, true/false, null); quoted scalars stay strings, so `"2"` in
// an args list is the string "2" as kubectl sends it.
#pragma once

#include <string>
#include <vector>

#include "kube/client.h"

namespace local {

// Every non-empty document of the text, in order. Throws std::runtime_error on bad YAML.
std::vector<kube::Object> yaml_documents(const std::string& text);

}  // namespace local
