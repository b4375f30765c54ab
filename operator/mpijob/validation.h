// Controller-side validation: every rule of mpi-operator's validation.go. The CRD refuses most
// of these at admission; what gets past it (a name too long for the last worker's hostname,
// objects created before the CRD was upgraded) ends the job with Failed/ValidationError.
#pragma once

#include <string>
#include <vector>

#include "mpijob/types.h"

namespace mpijob {

// A field error as Kubernetes formats them: "<field>: <Type>[: <value>]: <detail>".
struct FieldError {
  enum class Type { Required, Invalid, NotSupported };
  Type type = Type::Invalid;
  std::string field;   // "spec.mpiReplicaSpecs[Launcher].replicas"
  std::string value;   // rendered value for Invalid / NotSupported ("2", "\"Foo\"")
  std::string detail;  // "must be 1"
  std::string to_string() const;
};

// Validates a defaulted MPIJob. Empty when valid.
std::vector<FieldError> validate(const MPIJob& job);

// "[e1, e2]" like Kubernetes' aggregate error ("e1" for one).
std::string format_errors(const std::vector<FieldError>& errors);

// True when s is a DNS-1035 label (lower case, starts with a letter, at most 63 chars).
bool is_dns1035_label(const std::string& s);

}  // namespace mpijob
