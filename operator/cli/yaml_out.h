// JSON objects as YAML text, the way `kubectl get -o yaml` prints them: block style, keys sorted
// (as the JSON object keeps them), and every string that a YAML 1.1 reader would take for a
// number, a boolean or null double-quoted, so that the text applies back as the same object.
#pragma once

#include <string>

#include "kube/client.h"

namespace cli {

std::string to_yaml(const kube::Object& object);

}  // namespace cli
