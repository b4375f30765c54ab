// MPIJob manifests as `korovod run job.yaml` reads them (operator/local/local_run.cc): YAML
// documents to JSON (operator/local/manifest/yaml_json.cc), the MPIJob document found,
// defaulted and validated (operator/mpijob/types, defaults, validation).
//
// Invariants, for any file content:
//  - yaml_documents returns documents or throws std::runtime_error ("invalid YAML: ..."),
//    nothing else (no std::out_of_range from a huge number), and no crash;
//  - each document read back from its own JSON text (JSON is YAML, and kubectl takes JSON
//    manifests) is the same document: the YAML scalar rules and JSON's numbers agree;
//  - the fields the operator reads are type-checked first, as local mode does (the CRD's types,
//    mpijob/schema_types.h): each error names its field, and a manifest with one stops there;
//  - then defaulting is idempotent and validation returns field errors rather than failing.
//    A field of another type that the check does not cover (inside a pod template, a status)
//    makes the MPIJob accessors throw nlohmann's type_error, which the target accepts; no
//    undefined behaviour on the way (backoffLimit: 1e42 was an out-of-range float-to-int
//    conversion in validation, found by this target);
//  - the status decodes and re-encodes to an equal status.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "local/manifest/yaml_json.h"
#include "mpijob/defaults.h"
#include "mpijob/schema_types.h"
#include "mpijob/types.h"
#include "mpijob/validation.h"

namespace {

// JSON text that YAML reads: JSON may carry DEL (0x7f) raw inside a string, YAML may not (1.2,
// 5.1; yaml_documents refuses it as kubectl's go-yaml does), so it is written escaped, which both
// read ('a: "\x7f"' made {"a":"<DEL>"}; a fuzz.mpijob_manifest CI run found it). Throws
// nlohmann's type_error for a string that is not UTF-8.
std::string yaml_readable_json(const kube::Object& v) {
  std::string text = v.dump();
  for (size_t at = text.find('\x7f'); at != std::string::npos; at = text.find('\x7f', at))
    text.replace(at, 1, "\\u007f");
  return text;
}

// YAML allows an implicit (unmarked) mapping key of at most 1024 characters (YAML 1.2, 7.4), so
// the JSON text of a map with a longer key is not YAML: no round trip to ask for. What counts is
// the key as written, quotes and escapes included: yaml-cpp reads {"<1022 characters>": 1} but
// not {"<1023 characters>": 1} (a folded multi-line key of 1022 characters, found by the fuzzer).
bool has_key_longer_than_yaml_allows(const kube::Object& v) {
  if (v.is_object()) {
    for (const auto& [key, value] : v.items())
      if (yaml_readable_json(key).size() > 1024 || has_key_longer_than_yaml_allows(value)) return true;
  } else if (v.is_array()) {
    for (const auto& item : v)
      if (has_key_longer_than_yaml_allows(item)) return true;
  }
  return false;
}

void check_json_round_trip(const kube::Object& doc) {
  std::string text;
  try {
    if (has_key_longer_than_yaml_allows(doc)) return;
    text = yaml_readable_json(doc);
  } catch (const nlohmann::json::type_error&) {
    return;  // a string that is not UTF-8 (yaml-cpp does not check): no JSON text to read
  }
  std::vector<kube::Object> back;
  try {
    back = local::yaml_documents(text);
  } catch (const std::runtime_error& e) {
    FUZZ_CHECK(false, "a document's JSON text is not read back (" + std::string(e.what()) + "): " +
                          fuzz::excerpt(text));
  }
  FUZZ_CHECK(back.size() == 1 && back[0] == doc,
             "a document changed through its JSON text " + fuzz::excerpt(text) + " -> " +
                 (back.size() == 1 ? fuzz::excerpt(back[0].dump()) : std::to_string(back.size()) + " documents"));
}

void check_mpijob(kube::Object obj) {
  auto& meta = obj["metadata"];
  if (!meta.is_object() && !meta.is_null()) return;  // local_run.cc fails on it before these steps
  if (!meta.contains("namespace")) meta["namespace"] = "default";
  const auto type_errors = mpijob::check_schema_types(obj);
  for (const auto& e : type_errors) FUZZ_CHECK(!e.field.empty(), "a type error names no field: " + e.to_string());
  if (!type_errors.empty()) return;  // local_run.cc refuses the manifest here
  try {
    mpijob::MPIJob job(obj);
    mpijob::apply_defaults(job);
    const kube::Object once = job.json();
    mpijob::apply_defaults(job);
    FUZZ_CHECK(job.json() == once, "defaulting is not idempotent: " + fuzz::excerpt(once.dump()));
    const auto errors = mpijob::validate(job);
    for (const auto& e : errors) FUZZ_CHECK(!e.field.empty(), "a field error names no field: " + e.to_string());
    const mpijob::JobStatus status = job.status();
    FUZZ_CHECK(mpijob::status_from_json(mpijob::status_to_json(status)) == status, "status round trip");
  } catch (const nlohmann::json::type_error&) {
    // A field of the wrong type (see above).
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<kube::Object> docs;
  try {
    docs = local::yaml_documents(text);
  } catch (const std::runtime_error& e) {
    FUZZ_CHECK(std::string(e.what()).rfind("invalid YAML: ", 0) == 0, e.what());
    return 0;
  }
  for (const auto& doc : docs) check_json_round_trip(doc);
  for (const auto& doc : docs)
    if (doc.is_object() && doc.value("kind", kube::Object()) == "MPIJob") {
      check_mpijob(doc);
      break;  // the first MPIJob document, as local mode takes it
    }
  return 0;
}
