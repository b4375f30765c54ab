// YAML manifests to JSON (yaml_json.cc): the scalar rules, and the regressions the
// mpijob_manifest fuzz target found (tests/fuzz/corpus/mpijob_manifest/regression_*).
#include "local/manifest/yaml_json.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace local {
namespace {

kube::Object data_of(const std::string& yaml) {
  const auto docs = yaml_documents("kind: ConfigMap\ndata:\n" + yaml);
  EXPECT_EQ(docs.size(), 1u);
  return docs.empty() ? kube::Object() : docs[0]["data"];
}

TEST(YamlJson, PlainScalarsGetKubernetesTypesAndQuotedOnesStayStrings) {
  const auto d = data_of("  i: 42\n  neg: -7\n  plus: +7\n  f: 1.5\n  dot: .5\n  t: true\n  n: ~\n"
                         "  q: \"2\"\n  s: two\n");
  EXPECT_EQ(d["i"], 42);
  EXPECT_TRUE(d["i"].is_number_integer());
  EXPECT_EQ(d["neg"], -7);
  EXPECT_EQ(d["plus"], 7);
  EXPECT_EQ(d["f"], 1.5);
  EXPECT_EQ(d["dot"], 0.5);
  EXPECT_EQ(d["t"], true);
  EXPECT_TRUE(d["n"].is_null());
  EXPECT_EQ(d["q"], "2");
  EXPECT_EQ(d["s"], "two");
}

// std::stoll threw std::out_of_range (not the runtime_error callers handle) past int64.
TEST(YamlJson, IntegersPastInt64AreUint64ThenFloatsAsGoYamlResolvesThem) {
  const auto d = data_of("  i64: 9223372036854775807\n  u64: 18446744073709551615\n"
                         "  past: 99999999999999999999999\n  low: -9223372036854775809\n");
  EXPECT_EQ(d["i64"].get<int64_t>(), INT64_MAX);
  EXPECT_TRUE(d["u64"].is_number_unsigned());
  EXPECT_EQ(d["u64"].get<uint64_t>(), UINT64_MAX);
  EXPECT_TRUE(d["past"].is_number_float());
  EXPECT_DOUBLE_EQ(d["past"].get<double>(), 1e23);
  EXPECT_TRUE(d["low"].is_number_float());
}

// JSON writes large and small doubles as 1e+300: without exponent-only floats a document did not
// read back from its own JSON text. Out of double's range stays a string (as go-yaml leaves it).
TEST(YamlJson, ExponentFloatsAreNumbersAndOutOfRangeStaysAString) {
  const auto d = data_of("  e: 1e3\n  neg: -2.5E-3\n  json: 1e+300\n  huge: 1e999\n  bad: 1e\n");
  EXPECT_EQ(d["e"], 1000.0);
  EXPECT_EQ(d["neg"], -0.0025);
  EXPECT_EQ(d["json"], 1e300);
  EXPECT_EQ(d["huge"], "1e999");
  EXPECT_EQ(d["bad"], "1e");
  const kube::Object back = yaml_documents(kube::Object{{"x", 1e300}, {"y", 1e-300}}.dump())[0];
  EXPECT_EQ(back["x"], 1e300);
  EXPECT_EQ(back["y"], 1e-300);
}

// YAML 1.1 octal is not converted; read as a float, 0644 would silently become 644.
TEST(YamlJson, LeadingZeroIntegersStayStrings) {
  const auto d = data_of("  mode: 0644\n  zero: 0\n  frac: 0.25\n");
  EXPECT_EQ(d["mode"], "0644");
  EXPECT_EQ(d["zero"], 0);
  EXPECT_EQ(d["frac"], 0.25);
}

// std::regex matched recursively, one frame per character: 60,000 digits overflowed the stack.
TEST(YamlJson, LongDigitRunsDoNotOverflowTheStack) {
  const std::string digits(200000, '7');
  const auto d = data_of("  long: " + digits + "\n  longf: 0." + digits + "\n");
  EXPECT_EQ(d["long"], digits);  // past double's range: a string
  EXPECT_TRUE(d["longf"].is_number_float());
}

TEST(YamlJson, BadYamlIsARuntimeErrorSayingSo) {
  try {
    yaml_documents("a: [1, 2\n");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("invalid YAML: ", 0), 0u) << e.what();
  }
}

// yaml-cpp 0.7's LoadAll never returns on a stray ',' at block level (an endless run of empty
// documents, memory growing until the process is killed): an error instead, at once.
TEST(YamlJson, StrayCommaIsAnErrorNotAHang) {
  for (const std::string text : {",", "- a\n,", "kind: ConfigMap\n---\n  ,\n"}) {
    try {
      yaml_documents(text);
      FAIL() << "no error for " << text;
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("invalid YAML: ", 0), 0u) << e.what();
    }
  }
  EXPECT_EQ(yaml_documents("a: [1, 2]\n---\nb: {c: 3, d: 4}\n").size(), 2u);  // commas where they belong
}

// A tag on nothing ("!#") is not YAML null to yaml-cpp but is null as JSON: skipped like an empty
// document, so every document yaml_documents returns reads back from its JSON text.
TEST(YamlJson, TaggedEmptyDocumentIsSkippedLikeAnEmptyOne) {
  EXPECT_TRUE(yaml_documents("!#\n\n").empty());
  EXPECT_EQ(yaml_documents("!#\n---\na: 1\n").size(), 1u);
}

// YAML has no control characters but tab, LF and CR (kubectl's go-yaml refuses them too).
TEST(YamlJson, ControlCharactersAreRefusedNamingWhere) {
  try {
    yaml_documents(std::string("a: 1\nb: x\x03y\n"));
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("invalid YAML: control character 0x03 at line 2, column 5"),
              std::string::npos) << e.what();
  }
  EXPECT_EQ(yaml_documents("a:\t1\r\nb: 2\n").size(), 1u);  // tab and CRLF are fine
}

// yaml-cpp 0.7 ends a quoted string that is never closed at the end of the text: the rest of the
// manifest became one string. YAML (and kubectl) refuse it; a closed one across lines is fine.
TEST(YamlJson, AQuotedStringWithNoClosingQuoteIsRefusedNamingWhereItStarts) {
  const auto refused = [](const std::string& yaml) -> std::string {
    try {
      yaml_documents(yaml);
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(refused("kind: MPIJob\nmetadata:\n  name: \"pi\nspec:\n  slotsPerWorker: 1\n"),
            "invalid YAML: the string quoted at line 3, column 9 has no closing \" (it ran to the end of the file)");
  EXPECT_EQ(refused("a: 1\n'b: it''s\n"),
            "invalid YAML: the string quoted at line 2, column 1 has no closing ' (it ran to the end of the file)");
  EXPECT_EQ(refused("a: !t &x \"b\\\"\n"),
            "invalid YAML: the string quoted at line 1, column 10 has no closing \" (it ran to the end of the file)");
  EXPECT_EQ(refused("\xef\xbb\xbf" "a: \"b\n"),
            "invalid YAML: the string quoted at line 1, column 4 has no closing \" (it ran to the end of the file)");

  const kube::Object ok = data_of("  a: \"one\n    two \\\" three\"\n  b: 'it''s'\n  c: !t &x \"d\"\n  e: x\"y\n");
  EXPECT_EQ(ok["a"], "one two \" three");
  EXPECT_EQ(ok["b"], "it's");
  EXPECT_EQ(ok["c"], "d");
  EXPECT_EQ(ok["e"], "x\"y");
  EXPECT_EQ(yaml_documents("\xef\xbb\xbf" "a: \"b\"\n").at(0)["a"], "b");
}

}  // namespace
}  // namespace local
