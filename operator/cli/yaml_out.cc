#include "cli/yaml_out.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <regex>

namespace cli {
namespace {

// What a YAML 1.1 reader (yaml-cpp, kubectl) would not read back as this string.
bool needs_quotes(const std::string& s) {
  if (s.empty()) return true;
  static const std::regex kNumber("[-+]?(\\.[0-9]+|[0-9][0-9_]*(\\.[0-9_]*)?)([eE][-+]?[0-9]+)?|0x[0-9a-fA-F]+|0o?[0-7]+|"
                                  "[-+]?\\.(inf|Inf|INF)|\\.(nan|NaN|NAN)");
  if (std::regex_match(s, kNumber)) return true;
  std::string lower = s;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* word : {"true", "false", "yes", "no", "on", "off", "y", "n", "null", "~"}) {
    if (lower == word) return true;
  }
  return false;
}

void emit(YAML::Emitter& out, const kube::Object& v) {
  if (v.is_object()) {
    out << YAML::BeginMap;
    for (const auto& [key, value] : v.items()) {
      out << YAML::Key << key << YAML::Value;
      emit(out, value);
    }
    out << YAML::EndMap;
  } else if (v.is_array()) {
    out << YAML::BeginSeq;
    for (const auto& item : v) emit(out, item);
    out << YAML::EndSeq;
  } else if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (needs_quotes(s)) out << YAML::DoubleQuoted;
    out << s;
  } else if (v.is_null()) {
    out << YAML::Null;
  } else {
    out << v.dump();  // numbers and booleans as JSON writes them: also YAML
  }
}

}  // namespace

std::string to_yaml(const kube::Object& object) {
  YAML::Emitter out;
  out.SetIndent(2);
  out.SetSeqFormat(YAML::Block);
  out.SetMapFormat(YAML::Block);
  emit(out, object);
  return std::string(out.c_str()) + "\n";
}

}  // namespace cli
