#include "kube/label_selector.h"

#include <gtest/gtest.h>

namespace kube {
namespace {

const Object kLabels = {{"app", "web"}, {"tier", "frontend"}, {"env", "prod"}};

bool sel(const std::string& s, const Object& labels = kLabels) {
  return LabelSelector::parse(s).matches(labels);
}

TEST(LabelSelector, EmptySelectorMatchesEverything) {
  EXPECT_TRUE(sel(""));
  EXPECT_TRUE(sel("  ", Object()));
  EXPECT_TRUE(LabelSelector().matches_everything());
}

TEST(LabelSelector, EqualityOperators) {
  EXPECT_TRUE(sel("app=web"));
  EXPECT_TRUE(sel("app==web"));
  EXPECT_FALSE(sel("app=db"));
  EXPECT_TRUE(sel("app!=db"));
  EXPECT_FALSE(sel("app!=web"));
  EXPECT_TRUE(sel("missing!=x"));  // != matches when the label is absent
  EXPECT_FALSE(sel("missing=x"));
}

TEST(LabelSelector, SetOperators) {
  EXPECT_TRUE(sel("env in (prod, staging)"));
  EXPECT_FALSE(sel("env in (dev,staging)"));
  EXPECT_TRUE(sel("env notin (dev)"));
  EXPECT_FALSE(sel("env notin (prod)"));
  EXPECT_TRUE(sel("missing notin (x)"));
  EXPECT_FALSE(sel("missing in (x)"));
}

TEST(LabelSelector, ExistenceOperators) {
  EXPECT_TRUE(sel("app"));
  EXPECT_FALSE(sel("missing"));
  EXPECT_TRUE(sel("!missing"));
  EXPECT_FALSE(sel("!app"));
}

TEST(LabelSelector, AllRequirementsMustMatch) {
  EXPECT_TRUE(sel("app=web,tier in (frontend),!canary,env"));
  EXPECT_FALSE(sel("app=web,tier=backend"));
}

TEST(LabelSelector, AcceptsPrefixedKeysAndEmptyValues) {
  const Object labels = {{"training.kubeflow.org/job-name", "pi"}, {"empty", ""}};
  EXPECT_TRUE(sel("training.kubeflow.org/job-name=pi", labels));
  EXPECT_TRUE(sel("empty=", labels));
  EXPECT_FALSE(sel("empty=x", labels));
}

TEST(LabelSelector, ErrorsNameTheBadToken) {
  auto message = [](const std::string& s) {
    try {
      LabelSelector::parse(s);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("app=web,,tier").find("\",\""), std::string::npos);
  EXPECT_NE(message("app within (x)").find("\"within\""), std::string::npos);
  EXPECT_NE(message("app in ()").find("\")\""), std::string::npos);
  EXPECT_NE(message("app in (a b)").find("\"b\""), std::string::npos);
  EXPECT_NE(message("-bad=x").find("\"-bad\""), std::string::npos);
  EXPECT_NE(message("app=web web").find("\"web\" at position 8"), std::string::npos);
  EXPECT_NE(message("app in (x").find("end of input"), std::string::npos);
  EXPECT_NE(message("a=" + std::string(64, 'v')).find("invalid label value"), std::string::npos);
}

TEST(LabelSelector, ToStringRoundTrips) {
  const auto s = LabelSelector::parse("a=b, c!=d,e in (x,y),f notin (z),g,!h");
  EXPECT_EQ(s.to_string(), "a=b,c!=d,e in (x,y),f notin (z),g,!h");
  EXPECT_EQ(LabelSelector::parse(s.to_string()).requirements(), s.requirements());
}

TEST(LabelSelector, FromJsonCombinesMatchLabelsAndExpressions) {
  const auto s = LabelSelector::from_json(Object::parse(R"({
    "matchLabels": {"app": "web"},
    "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "qa"]},
                         {"key": "canary", "operator": "DoesNotExist"}]})"));
  EXPECT_TRUE(s.matches(kLabels));
  EXPECT_FALSE(s.matches(Object{{"app", "web"}, {"env", "dev"}}));
  EXPECT_FALSE(s.matches(Object{{"app", "web"}, {"env", "prod"}, {"canary", "1"}}));
}

TEST(LabelSelector, FromJsonNullMatchesNothingEmptyMatchesEverything) {
  EXPECT_FALSE(LabelSelector::from_json(Object()).matches(kLabels));
  EXPECT_TRUE(LabelSelector::from_json(Object::object()).matches(kLabels));
}

TEST(LabelSelector, FromJsonRejectsBadExpressions) {
  EXPECT_THROW(LabelSelector::from_json(Object::parse(
                   R"({"matchExpressions":[{"key":"a","operator":"In","values":[]}]})")),
               std::invalid_argument);
  EXPECT_THROW(LabelSelector::from_json(Object::parse(
                   R"({"matchExpressions":[{"key":"a","operator":"Exists","values":["x"]}]})")),
               std::invalid_argument);
  EXPECT_THROW(LabelSelector::from_json(Object::parse(
                   R"({"matchExpressions":[{"key":"a","operator":"Gt","values":["1"]}]})")),
               std::invalid_argument);
}

TEST(FieldSelector, MatchesDottedPaths) {
  const Object pod = {{"metadata", {{"name", "p1"}, {"namespace", "ns"}}},
                      {"status", {{"phase", "Running"}}}};
  EXPECT_TRUE(FieldSelector::parse("metadata.name=p1").matches(pod));
  EXPECT_TRUE(FieldSelector::parse("metadata.name==p1,metadata.namespace=ns").matches(pod));
  EXPECT_FALSE(FieldSelector::parse("metadata.name=p2").matches(pod));
  EXPECT_TRUE(FieldSelector::parse("status.phase!=Failed").matches(pod));
  EXPECT_FALSE(FieldSelector::parse("status.phase!=Running").matches(pod));
  EXPECT_TRUE(FieldSelector::parse("spec.nodeName=").matches(pod));  // missing compares as ""
  EXPECT_TRUE(FieldSelector::parse("").matches(pod));
}

TEST(FieldSelector, RejectsTermsWithoutOperator) {
  EXPECT_THROW(FieldSelector::parse("metadata.name"), std::invalid_argument);
  EXPECT_THROW(FieldSelector::parse("=x"), std::invalid_argument);
  EXPECT_THROW(FieldSelector::parse("a=b,,c=d"), std::invalid_argument);
}

}  // namespace
}  // namespace kube
