// mpijob::schema_fields() (the field types `korovod run` checks, schema_types.h) against the CRD
// a cluster applies (crds/kubeflow.org_mpijobs.yaml, read as local mode reads YAML): every entry
// under spec has the CRD's type and format, and every typed field of the CRD outside the pod
// templates and resource maps is an entry, so the two cannot drift apart.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "local/manifest/yaml_json.h"
#include "mpijob/schema_types.h"

namespace local {
namespace {

kube::Object crd_spec_schema() {
  std::ifstream in(KOROVOD_MPIJOB_CRD);
  std::stringstream text;
  text << in.rdbuf();
  const auto docs = yaml_documents(text.str());
  EXPECT_EQ(docs.size(), 1u) << KOROVOD_MPIJOB_CRD;
  return docs.at(0)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
}

// path -> "type/format" for the CRD's fields below spec, not descending into pod templates or
// maps of quantities (their values are int-or-string).
void collect(const kube::Object& schema, const std::string& path, std::map<std::string, std::string>& out) {
  out[path] = schema.value("type", "") + "/" + schema.value("format", "");
  if (path.ends_with(".template") || path.ends_with(".minResources")) return;
  if (schema.contains("properties"))
    for (const auto& [name, child] : schema["properties"].items()) collect(child, path + "." + name, out);
}

TEST(CrdSchema, TheCheckedFieldTypesAreTheCrds) {
  std::map<std::string, std::string> crd;
  collect(crd_spec_schema(), "spec", crd);
  ASSERT_GT(crd.size(), 20u);
  std::map<std::string, std::string> table;
  for (const auto& f : mpijob::schema_fields())
    if (f.path == "spec" || f.path.starts_with("spec.")) table[f.path] = f.type + "/" + f.format;
  EXPECT_EQ(table, crd);
}

}  // namespace
}  // namespace local
