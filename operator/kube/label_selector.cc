#include "kube/label_selector.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace kube {

namespace {

bool is_alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

bool is_name_part(std::string_view s, size_t max) {
  if (s.empty() || s.size() > max || !is_alnum(s.front()) || !is_alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return is_alnum(c) || c == '-' || c == '_' || c == '.'; });
}

bool is_dns_subdomain(std::string_view s) {
  if (s.empty() || s.size() > 253 || !is_alnum(s.front()) || !is_alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
            c == '-' || c == '.');
  });
}

// Tokens of the selector grammar, as in k8s.io/apimachinery/pkg/labels/selector.go.
enum class Tok { Ident, Eq, DoubleEq, NotEq, Not, LParen, RParen, Comma, End };

struct Token {
  Tok kind;
  std::string text;
  size_t pos;
};

std::vector<Token> lex(std::string_view s) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) { ++i; continue; }
    const size_t start = i;
    auto two = [&](const char* t) { return s.substr(i, 2) == t; };
    if (two("!=")) { out.push_back({Tok::NotEq, "!=", start}); i += 2; continue; }
    if (two("==")) { out.push_back({Tok::DoubleEq, "==", start}); i += 2; continue; }
    switch (c) {
      case '=': out.push_back({Tok::Eq, "=", start}); ++i; continue;
      case '!': out.push_back({Tok::Not, "!", start}); ++i; continue;
      case '(': out.push_back({Tok::LParen, "(", start}); ++i; continue;
      case ')': out.push_back({Tok::RParen, ")", start}); ++i; continue;
      case ',': out.push_back({Tok::Comma, ",", start}); ++i; continue;
      default: break;
    }
    while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i])) &&
           std::string_view("!=(),").find(s[i]) == std::string_view::npos)
      ++i;
    out.push_back({Tok::Ident, std::string(s.substr(start, i - start)), start});
  }
  out.push_back({Tok::End, "", s.size()});
  return out;
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text), toks_(lex(text)) {}

  std::vector<LabelRequirement> parse() {
    std::vector<LabelRequirement> reqs;
    if (peek().kind == Tok::End) return reqs;
    while (true) {
      reqs.push_back(requirement());
      const Token& t = next();
      if (t.kind == Tok::End) return reqs;
      if (t.kind != Tok::Comma) fail(t, "expected ',' or end of selector");
    }
  }

 private:
  const Token& peek() const { return toks_[i_]; }
  const Token& next() { return toks_[i_ < toks_.size() - 1 ? i_++ : i_]; }

  [[noreturn]] void fail(const Token& t, const std::string& why) const {
    const std::string shown = t.kind == Tok::End ? "end of input" : "\"" + t.text + "\"";
    throw std::invalid_argument("invalid label selector \"" + std::string(text_) + "\": " + why +
                                ", found " + shown + " at position " + std::to_string(t.pos));
  }

  std::string key() {
    const Token& t = next();
    if (t.kind != Tok::Ident) fail(t, "expected a label key");
    if (!is_valid_label_key(t.text)) fail(t, "invalid label key");
    return t.text;
  }

  std::string value() {
    const Token& t = peek();
    if (t.kind != Tok::Ident) return "";  // "a=" selects the empty value, as in Kubernetes
    next();
    if (!is_valid_label_value(t.text)) fail(t, "invalid label value");
    return t.text;
  }

  std::vector<std::string> value_set() {
    if (next().kind != Tok::LParen) fail(toks_[i_ - 1], "expected '('");
    std::vector<std::string> values;
    while (true) {
      const Token& t = next();
      if (t.kind == Tok::RParen && values.empty()) fail(t, "expected at least one value");
      if (t.kind != Tok::Ident) fail(t, "expected a label value");
      if (!is_valid_label_value(t.text)) fail(t, "invalid label value");
      values.push_back(t.text);
      const Token& sep = next();
      if (sep.kind == Tok::RParen) return values;
      if (sep.kind != Tok::Comma) fail(sep, "expected ',' or ')'");
    }
  }

  LabelRequirement requirement() {
    using Op = LabelRequirement::Op;
    if (peek().kind == Tok::Not) {
      next();
      return {key(), Op::DoesNotExist, {}};
    }
    LabelRequirement r{key(), Op::Exists, {}};
    const Token& op = peek();
    switch (op.kind) {
      case Tok::End:
      case Tok::Comma: return r;
      case Tok::Eq:
      case Tok::DoubleEq: next(); r.op = Op::Equals; r.values = {value()}; return r;
      case Tok::NotEq: next(); r.op = Op::NotEquals; r.values = {value()}; return r;
      case Tok::Ident:
        if (op.text == "in" || op.text == "notin") {
          next();
          r.op = op.text == "in" ? Op::In : Op::NotIn;
          r.values = value_set();
          return r;
        }
        [[fallthrough]];
      default: fail(op, "expected an operator (=, ==, !=, in, notin)");
    }
  }

  std::string_view text_;
  std::vector<Token> toks_;
  size_t i_ = 0;
};

const std::string* label_value(const Object& labels, const std::string& key) {
  if (!labels.is_object()) return nullptr;
  auto it = labels.find(key);
  if (it == labels.end() || !it->is_string()) return nullptr;
  return it->get_ptr<const std::string*>();
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

bool is_valid_label_key(std::string_view key) {
  const size_t slash = key.find('/');
  if (slash == std::string_view::npos) return is_name_part(key, 63);
  return is_dns_subdomain(key.substr(0, slash)) && is_name_part(key.substr(slash + 1), 63);
}

bool is_valid_label_value(std::string_view value) {
  return value.empty() || is_name_part(value, 63);
}

bool LabelRequirement::matches(const Object& labels) const {
  return matches_lookup([&](const std::string& k) { return label_value(labels, k); });
}

bool LabelRequirement::matches_lookup(const LabelLookup& lookup) const {
  const std::string* v = lookup(key);
  switch (op) {
    case Op::Exists: return v != nullptr;
    case Op::DoesNotExist: return v == nullptr;
    case Op::Equals: return v && *v == values.at(0);
    case Op::NotEquals: return !v || *v != values.at(0);
    case Op::In: return v && contains(values, *v);
    case Op::NotIn: return !v || !contains(values, *v);
  }
  return false;
}

LabelSelector LabelSelector::parse(std::string_view text) {
  LabelSelector s;
  s.requirements_ = Parser(text).parse();
  return s;
}

LabelSelector LabelSelector::nothing() {
  LabelSelector s;
  s.match_nothing_ = true;
  return s;
}

LabelSelector LabelSelector::from_json(const Object& selector) {
  using Op = LabelRequirement::Op;
  if (selector.is_null()) return nothing();
  if (!selector.is_object()) throw std::invalid_argument("label selector must be an object");
  LabelSelector s;
  // Named copies: iterating a temporary's items() would dangle.
  const Object match_labels = selector.value("matchLabels", Object::object());
  const Object match_expressions = selector.value("matchExpressions", Object::array());
  for (const auto& [k, v] : match_labels.items()) {
    if (!is_valid_label_key(k)) throw std::invalid_argument("invalid label key \"" + k + "\"");
    if (!v.is_string() || !is_valid_label_value(v.get<std::string>()))
      throw std::invalid_argument("invalid value for label \"" + k + "\": " + v.dump());
    s.requirements_.push_back({k, Op::Equals, {v.get<std::string>()}});
  }
  for (const auto& e : match_expressions) {
    LabelRequirement r{e.value("key", ""), Op::Exists, {}};
    if (!is_valid_label_key(r.key))
      throw std::invalid_argument("invalid label key \"" + r.key + "\"");
    const std::string op = e.value("operator", "");
    const Object values = e.value("values", Object::array());
    for (const auto& v : values) r.values.push_back(v.get<std::string>());
    if (op == "In" || op == "NotIn") {
      r.op = op == "In" ? Op::In : Op::NotIn;
      if (r.values.empty())
        throw std::invalid_argument("operator " + op + " needs values for key \"" + r.key + "\"");
    } else if (op == "Exists" || op == "DoesNotExist") {
      r.op = op == "Exists" ? Op::Exists : Op::DoesNotExist;
      if (!r.values.empty())
        throw std::invalid_argument("operator " + op + " takes no values for key \"" + r.key + "\"");
    } else {
      throw std::invalid_argument("invalid label selector operator \"" + op + "\"");
    }
    s.requirements_.push_back(std::move(r));
  }
  return s;
}

bool LabelSelector::matches(const Object& labels) const {
  if (match_nothing_) return false;
  return std::all_of(requirements_.begin(), requirements_.end(),
                     [&](const LabelRequirement& r) { return r.matches(labels); });
}

bool LabelSelector::matches(const std::map<std::string, std::string>& labels) const {
  return matches_lookup([&](const std::string& k) -> const std::string* {
    auto it = labels.find(k);
    return it == labels.end() ? nullptr : &it->second;
  });
}

bool LabelSelector::matches_lookup(const LabelLookup& lookup) const {
  if (match_nothing_) return false;
  return std::all_of(requirements_.begin(), requirements_.end(),
                     [&](const LabelRequirement& r) { return r.matches_lookup(lookup); });
}

std::string LabelSelector::to_string() const {
  using Op = LabelRequirement::Op;
  std::string out;
  for (const auto& r : requirements_) {
    if (!out.empty()) out += ",";
    switch (r.op) {
      case Op::Exists: out += r.key; break;
      case Op::DoesNotExist: out += "!" + r.key; break;
      case Op::Equals: out += r.key + "=" + r.values[0]; break;
      case Op::NotEquals: out += r.key + "!=" + r.values[0]; break;
      case Op::In:
      case Op::NotIn: {
        out += r.key + (r.op == Op::In ? " in (" : " notin (");
        for (size_t i = 0; i < r.values.size(); ++i) out += (i ? "," : "") + r.values[i];
        out += ")";
      }
    }
  }
  return out;
}

FieldSelector FieldSelector::parse(std::string_view text) {
  FieldSelector s;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view term = text.substr(start, end - start);
    while (!term.empty() && std::isspace(static_cast<unsigned char>(term.front()))) term.remove_prefix(1);
    while (!term.empty() && std::isspace(static_cast<unsigned char>(term.back()))) term.remove_suffix(1);
    if (!term.empty()) {
      Term t;
      size_t op = term.find("!=");
      size_t op_len = 2;
      if (op == std::string_view::npos) {
        op = term.find('=');
        op_len = term.substr(op == std::string_view::npos ? 0 : op).starts_with("==") ? 2 : 1;
      } else {
        t.equals = false;
      }
      if (op == std::string_view::npos || op == 0)
        throw std::invalid_argument("invalid field selector term \"" + std::string(term) + "\"");
      t.path = std::string(term.substr(0, op));
      t.value = std::string(term.substr(op + op_len));
      s.terms_.push_back(std::move(t));
    } else if (!text.empty()) {
      throw std::invalid_argument("empty term in field selector \"" + std::string(text) + "\"");
    }
    start = end + 1;
  }
  return s;
}

bool FieldSelector::matches(const Object& obj) const {
  for (const auto& t : terms_) {
    const Object* cur = &obj;
    size_t start = 0;
    while (cur && start <= t.path.size()) {
      size_t dot = t.path.find('.', start);
      if (dot == std::string::npos) dot = t.path.size();
      const std::string part = t.path.substr(start, dot - start);
      cur = cur->is_object() && cur->contains(part) ? &cur->at(part) : nullptr;
      start = dot + 1;
    }
    std::string actual;
    if (cur && cur->is_string()) actual = cur->get<std::string>();
    else if (cur && !cur->is_null()) actual = cur->dump();
    if ((actual == t.value) != t.equals) return false;
  }
  return true;
}

}  // namespace kube
