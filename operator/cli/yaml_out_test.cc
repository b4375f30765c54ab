// to_yaml: what --dry-run -o yaml prints reads back (as kubectl apply reads it) as the same object.
#include "cli/yaml_out.h"

#include <gtest/gtest.h>

#include "local/manifest/yaml_json.h"

namespace cli {
namespace {

using kube::Object;

TEST(YamlOut, StringsThatLookLikeOtherTypesAreQuotedAndReadBackAsStrings) {
  const Object o = {{"args", {"mpirun", "-n", "2", "1.5", "1e3", "0x1f", "true", "yes", "off", "null", "~", "",
                              "a: b", "#x", "- item", "plain text"}},
                    {"n", 3},
                    {"f", 0.5},
                    {"b", false},
                    {"z", nullptr},
                    {"empty", Object::object()},
                    {"none", Object::array()},
                    {"nested", {{"list", {{{"name", "w"}, {"cpu", "500m"}}}}}}};
  const std::string text = to_yaml(o);
  const auto docs = local::yaml_documents(text);
  ASSERT_EQ(docs.size(), 1u) << text;
  EXPECT_EQ(docs[0], o) << text;
}

TEST(YamlOut, BlockStyleAsKubectlPrintsIt) {
  EXPECT_EQ(to_yaml(Object{{"kind", "MPIJob"}, {"spec", {{"slotsPerWorker", 1}, {"args", {"a", "2"}}}}}),
            "kind: MPIJob\n"
            "spec:\n"
            "  args:\n"
            "    - a\n"
            "    - \"2\"\n"
            "  slotsPerWorker: 1\n");
}

}  // namespace
}  // namespace cli
