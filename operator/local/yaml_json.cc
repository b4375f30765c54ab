#include "local/yaml_json.h"

#include <yaml-cpp/yaml.h>

#include <regex>
#include <stdexcept>

namespace local {
namespace {

kube::Object scalar(const YAML::Node& node) {
  const std::string& v = node.Scalar();
  if (node.Tag() == "!") return v;  // quoted
  static const std::regex int_re(R"([-+]?(0|[1-9][0-9]*))");
  static const std::regex float_re(R"([-+]?([0-9]+\.[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?)");
  if (v == "null" || v == "Null" || v == "NULL" || v == "~" || v.empty()) return nullptr;
  if (v == "true" || v == "True" || v == "TRUE") return true;
  if (v == "false" || v == "False" || v == "FALSE") return false;
  if (std::regex_match(v, int_re)) return std::stoll(v);
  if (std::regex_match(v, float_re)) return std::stod(v);
  return v;
}

kube::Object to_json(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Scalar:
      return scalar(node);
    case YAML::NodeType::Sequence: {
      kube::Object arr = kube::Object::array();
      for (const auto& item : node) arr.push_back(to_json(item));
      return arr;
    }
    case YAML::NodeType::Map: {
      kube::Object obj = kube::Object::object();
      for (const auto& kv : node) obj[kv.first.as<std::string>()] = to_json(kv.second);
      return obj;
    }
  }
  return nullptr;
}

}  // namespace

std::vector<kube::Object> yaml_documents(const std::string& text) {
  std::vector<kube::Object> docs;
  try {
    for (const auto& node : YAML::LoadAll(text)) {
      if (node.IsNull()) continue;
      docs.push_back(to_json(node));
    }
  } catch (const YAML::Exception& e) {
    throw std::runtime_error(std::string("invalid YAML: ") + e.what());
  }
  return docs;
}

}  // namespace local
