#include "mpijob/schema_types.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>

namespace mpijob {
namespace {

// The JSON type as Kubernetes' schema validation names it; a whole-valued float is an integer.
std::string json_type(const kube::Object& v) {
  if (v.is_object()) return "object";
  if (v.is_array()) return "array";
  if (v.is_string()) return "string";
  if (v.is_boolean()) return "boolean";
  if (v.is_number_integer()) return "integer";
  if (v.is_number_float()) {
    const double d = v.get<double>();
    return std::isfinite(d) && d == std::trunc(d) ? "integer" : "number";
  }
  return "null";
}

bool in_range(const kube::Object& v, const std::string& format) {
  const bool int32 = format == "int32";
  return integer_within(v, int32 ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int64_t>::min(),
                        int32 ? std::numeric_limits<int32_t>::max() : std::numeric_limits<int64_t>::max())
      .has_value();
}

// Checks `field` at each value the rest of its path reaches from `v` (found at `path`).
void check_at(std::vector<FieldError>& errs, const SchemaField& field, const kube::Object& v,
              std::string_view rest, const std::string& path) {
  if (rest.empty()) {
    if (v.is_null()) return;
    const std::string type = json_type(v);
    if (type != field.type) {
      errs.push_back({FieldError::Type::Invalid, path, "\"" + type + "\"", "must be of type " + field.type});
    } else if (type == "integer" && !in_range(v, field.format)) {
      errs.push_back({FieldError::Type::Invalid, path, v.dump(), "must be an " + field.format + " integer"});
    }
    return;
  }
  if (!v.is_object()) return;  // absent, or its own type error was reported at its own path
  const size_t dot = rest.find('.');
  const std::string_view key = rest.substr(0, dot);
  const std::string_view next = dot == std::string_view::npos ? std::string_view() : rest.substr(dot + 1);
  if (key == "*") {
    for (const auto& [name, member] : v.items()) check_at(errs, field, member, next, path + "." + name);
    return;
  }
  const auto it = v.find(std::string(key));
  if (it != v.end()) check_at(errs, field, *it, next, path.empty() ? std::string(key) : path + "." + std::string(key));
}

std::vector<SchemaField> make_fields() {
  std::vector<SchemaField> f = {
      // ObjectMeta, which the API server types itself (no CRD schema)
      {"metadata", "object", ""},
      {"metadata.name", "string", ""},
      {"metadata.namespace", "string", ""},
      {"metadata.uid", "string", ""},
      {"metadata.labels", "object", ""},
      {"metadata.labels.*", "string", ""},
      {"metadata.annotations", "object", ""},
      {"metadata.annotations.*", "string", ""},
      // the CRD's openAPIV3Schema
      {"spec", "object", ""},
      {"spec.slotsPerWorker", "integer", "int32"},
      {"spec.runLauncherAsWorker", "boolean", ""},
      {"spec.sshAuthMountPath", "string", ""},
      {"spec.mpiImplementation", "string", ""},
      {"spec.launcherCreationPolicy", "string", ""},
      {"spec.runPolicy", "object", ""},
      {"spec.runPolicy.cleanPodPolicy", "string", ""},
      {"spec.runPolicy.ttlSecondsAfterFinished", "integer", "int32"},
      {"spec.runPolicy.activeDeadlineSeconds", "integer", "int64"},
      {"spec.runPolicy.backoffLimit", "integer", "int32"},
      {"spec.runPolicy.suspend", "boolean", ""},
      {"spec.runPolicy.managedBy", "string", ""},
      {"spec.runPolicy.schedulingPolicy", "object", ""},
      {"spec.runPolicy.schedulingPolicy.minAvailable", "integer", "int32"},
      {"spec.runPolicy.schedulingPolicy.queue", "string", ""},
      {"spec.runPolicy.schedulingPolicy.priorityClass", "string", ""},
      {"spec.runPolicy.schedulingPolicy.scheduleTimeoutSeconds", "integer", "int32"},
      {"spec.runPolicy.schedulingPolicy.minResources", "object", ""},
      {"spec.mpiReplicaSpecs", "object", ""},
  };
  for (const char* role : {"Launcher", "Worker"}) {
    const std::string p = std::string("spec.mpiReplicaSpecs.") + role;
    f.push_back({p, "object", ""});
    f.push_back({p + ".replicas", "integer", "int32"});
    f.push_back({p + ".restartPolicy", "string", ""});
    f.push_back({p + ".template", "object", ""});
  }
  return f;
}

}  // namespace

const std::vector<SchemaField>& schema_fields() {
  static const std::vector<SchemaField> fields = make_fields();
  return fields;
}

std::vector<FieldError> check_schema_types(const kube::Object& obj) {
  std::vector<FieldError> errs;
  for (const auto& field : schema_fields()) check_at(errs, field, obj, field.path, "");
  return errs;
}

}  // namespace mpijob
