// The types the MPIJob CRD's schema (crds/kubeflow.org_mpijobs.yaml) gives the fields this
// operator reads. On a cluster the API server refuses a manifest whose field has another type
// before the operator sees it; `korovod run` has no API server in front of it, so it checks
// these first, and the accessors (types.h) never meet "replicas: two" or "backoffLimit: 2.5".
#pragma once

#include <string>
#include <vector>

#include "mpijob/validation.h"

namespace mpijob {

// One typed field: a dotted path from the object's root ("spec.runPolicy.backoffLimit"; "*"
// for every member of a map), its schema type ("object", "string", "boolean", "integer") and,
// for integers, its format ("int32", "int64").
struct SchemaField {
  std::string path;
  std::string type;
  std::string format;
};

// The fields, parents before children.
const std::vector<SchemaField>& schema_fields();

// A field error for each of those fields present with another type, or, for an integer, out of
// its format's range; errors name the field as the API server does
// ("spec.runPolicy.backoffLimit: Invalid value: \"number\": must be of type integer"). A whole
// number written as a float (2.0) is an integer, as Kubernetes' JSON decoding reads it. Null is
// absent. Below a field of the wrong type nothing is checked.
std::vector<FieldError> check_schema_types(const kube::Object& obj);

}  // namespace mpijob
