// Kubernetes label selectors ("a=b,c!=d,e in (x,y),!f,g") and the equality-only field
// selectors ("metadata.name=x,status.phase!=Failed"): parsing, matching, and building from a
// metav1.LabelSelector object (matchLabels / matchExpressions).
// Bad input throws std::invalid_argument naming the offending token.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kube/client.h"

namespace kube {

// Looks a label up by key: its value, or nullptr when the object has no such label. Lets
// caches that keep labels in their own form match without building JSON.
using LabelLookup = std::function<const std::string*(const std::string&)>;

struct LabelRequirement {
  enum class Op { Equals, NotEquals, In, NotIn, Exists, DoesNotExist };
  std::string key;
  Op op = Op::Exists;
  std::vector<std::string> values;  // one for Equals/NotEquals, >=1 for In/NotIn, none otherwise

  // `labels` is metadata.labels: a JSON object of strings, or null when absent.
  bool matches(const Object& labels) const;
  bool matches_lookup(const LabelLookup& lookup) const;
  bool operator==(const LabelRequirement&) const = default;
};

class LabelSelector {
 public:
  LabelSelector() = default;  // matches everything

  static LabelSelector parse(std::string_view text);
  // From a metav1.LabelSelector. As in Kubernetes, a null selector matches nothing and an
  // empty one ({}) matches everything.
  static LabelSelector from_json(const Object& selector);
  static LabelSelector nothing();

  bool matches(const Object& labels) const;
  bool matches(const std::map<std::string, std::string>& labels) const;
  bool matches_lookup(const LabelLookup& lookup) const;
  bool matches_everything() const { return !match_nothing_ && requirements_.empty(); }
  const std::vector<LabelRequirement>& requirements() const { return requirements_; }
  // Canonical text form; parse(to_string()) gives an equal selector.
  std::string to_string() const;

 private:
  std::vector<LabelRequirement> requirements_;
  bool match_nothing_ = false;
};

// A field selector: comma-separated `path=value`, `path==value` or `path!=value`, where path
// is a dotted path into the object (metadata.name, metadata.namespace, status.phase, ...).
// A missing field compares as "".
class FieldSelector {
 public:
  FieldSelector() = default;  // matches everything
  static FieldSelector parse(std::string_view text);
  bool matches(const Object& obj) const;
  bool empty() const { return terms_.empty(); }

  struct Term {
    std::string path;
    bool equals = true;
    std::string value;
  };
  const std::vector<Term>& terms() const { return terms_; }

 private:
  std::vector<Term> terms_;
};

// Validation Kubernetes applies to label keys (optional DNS-subdomain prefix + '/' + name of
// <=63 alphanumerics, '-', '_', '.') and values (empty, or <=63 of the same, alnum at ends).
bool is_valid_label_key(std::string_view key);
bool is_valid_label_value(std::string_view value);

}  // namespace kube
