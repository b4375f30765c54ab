#include "local/manifest/yaml_json.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string_view>

namespace local {
namespace {

size_t digits(std::string_view s, size_t at) {
  size_t n = 0;
  while (at + n < s.size() && s[at + n] >= '0' && s[at + n] <= '9') ++n;
  return n;
}

// [-+]?(0|[1-9][0-9]*)
bool is_int(std::string_view s) {
  const size_t sign = !s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0;
  const size_t n = digits(s, sign);
  return n > 0 && sign + n == s.size() && (n == 1 || s[sign] != '0');
}

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?  (go-yaml's float, which covers every
// number JSON can write: a JSON manifest's 1e3 is a number, as kubectl reads it)
bool is_float(std::string_view s) {
  size_t i = !s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0;
  size_t mantissa = digits(s, i);
  i += mantissa;
  if (i < s.size() && s[i] == '.') {
    const size_t fraction = digits(s, i + 1);
    mantissa += fraction;
    i += 1 + fraction;
  }
  if (mantissa == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    const size_t exponent = digits(s, i);
    if (exponent == 0) return false;
    i += exponent;
  }
  return i == s.size();
}

// 0644, 007: YAML 1.1 octal, which this reader does not convert; as a float it would be a
// different number (644), so it stays the string it was.
bool is_octal_like(std::string_view s) {
  const size_t sign = !s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0;
  const size_t n = digits(s, sign);
  return n > 1 && sign + n == s.size() && s[sign] == '0';
}

// Scanned by hand, not std::regex: its matcher recurses once per character (a long run of
// digits overflowed the stack) and std::stoll threw std::out_of_range past int64.
kube::Object scalar(const YAML::Node& node) {
  const std::string& v = node.Scalar();
  if (node.Tag() == "!") return v;  // quoted
  if (v == "null" || v == "Null" || v == "NULL" || v == "~" || v.empty()) return nullptr;
  if (v == "true" || v == "True" || v == "TRUE") return true;
  if (v == "false" || v == "False" || v == "FALSE") return false;
  if (is_int(v)) {
    // int64, else uint64, else (too large for both) a float, as go-yaml resolves it.
    const char* begin = v.data() + (v[0] == '+' ? 1 : 0);
    int64_t i = 0;
    if (auto r = std::from_chars(begin, v.data() + v.size(), i); r.ec == std::errc()) return i;
    uint64_t u = 0;
    if (auto r = std::from_chars(begin, v.data() + v.size(), u); r.ec == std::errc()) return u;
  }
  if ((is_int(v) || is_float(v)) && !is_octal_like(v)) {
    const double d = std::strtod(v.c_str(), nullptr);
    if (std::isfinite(d)) return d;  // 1e999 stays a string, as go-yaml leaves it
  }
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

bool is_yaml_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// Whether the scalar node that starts at `at` (its tag and anchor, then its content) is quoted,
// where its opening quote is and whether a closing one follows.
struct QuotedEnd {
  bool quoted = false;
  bool closed = false;
  size_t quote_at = 0;
};
QuotedEnd quoted_end(const std::string& text, size_t at) {
  while (at < text.size() && (text[at] == '!' || text[at] == '&')) {  // node properties
    while (at < text.size() && !is_yaml_space(text[at])) ++at;
    while (at < text.size() && is_yaml_space(text[at])) ++at;
  }
  if (at >= text.size() || (text[at] != '"' && text[at] != '\'')) return {};
  const char quote = text[at];
  for (size_t i = at + 1; i < text.size(); ++i) {
    if (quote == '"' && text[i] == '\\') {
      ++i;  // an escape: the next character is not the end
    } else if (text[i] == quote) {
      if (quote == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
        ++i;  // '' is a quote inside single quotes
      } else {
        return {true, true, at};
      }
    }
  }
  return {true, false, at};
}

// A first pass of yaml-cpp's parser over the text, for what yaml-cpp 0.7 accepts and YAML (and
// kubectl's go-yaml) does not:
//  - a stray ',' at block level (",", "- a\n,"): read as an endless run of empty documents
//    without consuming it, so YAML::LoadAll never returned and its list grew until the process
//    was killed. Every document consumes at least one character, so a text of n characters holds
//    at most n + 1 documents; more means the parser is stuck;
//  - a quoted scalar with no closing quote: it ran to the end of the text, the rest of the file
//    one string (name: "pi ... took every field after it; go-yaml: "found unexpected end of
//    stream").
// Both found by the mpijob_manifest fuzz target.
class StructureCheck final : public YAML::EventHandler {
 public:
  explicit StructureCheck(const std::string& text) : text_(text) {
    // yaml-cpp counts positions after a UTF-8 byte order mark.
    if (text_.rfind("\xef\xbb\xbf", 0) == 0) offset_ = 3;
  }
  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++documents_ > text_.size() + 1) {
      throw std::runtime_error("invalid YAML: content the parser cannot read at line " +
                               std::to_string(mark.line + 1) + ", column " + std::to_string(mark.column + 1) +
                               " (a ',' outside a flow collection?)");
    }
  }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t, const std::string&) override {
    if (mark.pos < 0) return;
    const QuotedEnd end = quoted_end(text_, static_cast<size_t>(mark.pos) + offset_);
    if (end.quoted && !end.closed) {
      throw std::runtime_error("invalid YAML: the string quoted at " + where(end.quote_at) + " has no closing " +
                               std::string(1, text_[end.quote_at]) + " (it ran to the end of the file)");
    }
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

 private:
  std::string where(size_t at) const {
    const size_t line_start = std::max(offset_, at == 0 ? 0 : text_.rfind('\n', at - 1) + 1);  // npos + 1 == 0
    const auto lines = std::count(text_.begin(), text_.begin() + static_cast<std::ptrdiff_t>(at), '\n');
    return "line " + std::to_string(lines + 1) + ", column " + std::to_string(at - line_start + 1);
  }

  const std::string& text_;
  size_t offset_ = 0;
  size_t documents_ = 0;
};

void check_structure(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  StructureCheck check(text);
  while (parser.HandleNextDocument(check)) {
  }
}

// YAML's character set (1.2, 5.1) has no C0 control character but tab, line feed and carriage
// return, and no DEL; go-yaml (kubectl) refuses them. yaml-cpp takes them into plain scalars, and
// the JSON it then makes ("\u0003") does not read back through yaml-cpp (the mpijob_manifest
// fuzz target).
void check_characters(const std::string& text) {
  size_t line = 1, column = 1;
  for (const char c : text) {
    const auto b = static_cast<unsigned char>(c);
    if ((b < 0x20 && b != '\t' && b != '\n' && b != '\r') || b == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", b);
      throw std::runtime_error("invalid YAML: control character " + std::string(hex) + " at line " +
                               std::to_string(line) + ", column " + std::to_string(column) +
                               " (YAML allows none but tab, line feed and carriage return)");
    }
    if (c == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
}

}  // namespace

std::vector<kube::Object> yaml_documents(const std::string& text) {
  std::vector<kube::Object> docs;
  try {
    check_characters(text);
    check_structure(text);
    for (const auto& node : YAML::LoadAll(text)) {
      // Empty documents are skipped, as kubectl skips them; also one that only looks non-empty
      // to yaml-cpp (a tag on nothing, "!#"), which is null as JSON and would not read back.
      kube::Object doc = node.IsNull() ? kube::Object() : to_json(node);
      if (doc.is_null()) continue;
      docs.push_back(std::move(doc));
    }
  } catch (const YAML::Exception& e) {
    throw std::runtime_error(std::string("invalid YAML: ") + e.what());
  }
  return docs;
}

}  // namespace local
