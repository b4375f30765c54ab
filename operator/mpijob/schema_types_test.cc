// The CRD's field types, checked before anything reads the fields (schema_types.h), and the
// integer accessors that no longer truncate or overflow (types.h member<T>). The table's
// agreement with crds/kubeflow.org_mpijobs.yaml is operator/local/manifest/crd_schema_test.cc.
#include <gtest/gtest.h>

#include "mpijob/defaults.h"
#include "mpijob/schema_types.h"
#include "mpijob/testing/fixtures.h"
#include "mpijob/validation.h"

namespace mpijob {
namespace {

std::vector<std::string> type_errors(const kube::Object& obj) {
  std::vector<std::string> out;
  for (const auto& e : check_schema_types(obj)) out.push_back(e.to_string());
  return out;
}

using Strings = std::vector<std::string>;

TEST(SchemaTypes, TheExampleHasTheCrdTypes) { EXPECT_EQ(type_errors(testing::pi_job()), Strings{}); }

TEST(SchemaTypes, AFieldOfAnotherTypeIsNamedWithTheTypeItHas) {
  kube::Object job = testing::pi_job();
  job["spec"]["mpiReplicaSpecs"]["Launcher"]["replicas"] = "two";
  job["spec"]["runPolicy"]["backoffLimit"] = 2.5;
  job["spec"]["runPolicy"]["suspend"] = "yes";
  job["metadata"]["annotations"]["korovod.io/elastic"] = true;
  EXPECT_EQ(type_errors(job),
            (Strings{"metadata.annotations.korovod.io/elastic: Invalid value: \"boolean\": must be of type string",
                     "spec.runPolicy.backoffLimit: Invalid value: \"number\": must be of type integer",
                     "spec.runPolicy.suspend: Invalid value: \"string\": must be of type boolean",
                     "spec.mpiReplicaSpecs.Launcher.replicas: Invalid value: \"string\": must be of type integer"}));
}

TEST(SchemaTypes, IntegersOutsideTheirFormatAreRefusedAndWholeFloatsAreIntegers) {
  kube::Object job = testing::pi_job();
  job["spec"]["slotsPerWorker"] = 3000000000LL;
  job["spec"]["runPolicy"]["backoffLimit"] = 1e42;  // as YAML reads 1000000000000000000000000000000000000000000
  job["spec"]["runPolicy"]["activeDeadlineSeconds"] = 3000000000LL;  // int64: fine
  job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 3.0;
  EXPECT_EQ(type_errors(job), (Strings{"spec.slotsPerWorker: Invalid value: 3000000000: must be an int32 integer",
                                       "spec.runPolicy.backoffLimit: Invalid value: 1e+42: must be an int32 integer"}));

  job["spec"]["slotsPerWorker"] = 1;
  job["spec"]["runPolicy"]["backoffLimit"] = 2.0;
  MPIJob parsed(job);
  EXPECT_EQ(parsed.backoff_limit(), 2);
  EXPECT_EQ(parsed.replicas(ReplicaType::Worker), 3);
  EXPECT_EQ(parsed.active_deadline_seconds(), 3000000000LL);
}

TEST(SchemaTypes, NothingIsCheckedBelowAParentOfTheWrongType) {
  kube::Object job = testing::pi_job();
  job["spec"]["runPolicy"] = "Never";
  EXPECT_EQ(type_errors(job), Strings{"spec.runPolicy: Invalid value: \"string\": must be of type object"});
  job["spec"] = kube::Object::array();
  EXPECT_EQ(type_errors(job), Strings{"spec: Invalid value: \"array\": must be of type object"});
}

TEST(SchemaTypes, NullIsAbsent) {
  kube::Object job = testing::pi_job();
  job["spec"]["runPolicy"]["backoffLimit"] = nullptr;
  job["spec"]["runPolicy"]["schedulingPolicy"] = nullptr;
  EXPECT_EQ(type_errors(job), Strings{});
}

// validate() reports type errors by field, alone (the other rules read those fields), where it
// used to say "spec: Invalid value: <malformed>: [json.exception.type_error.302] ...".
TEST(SchemaTypes, ValidateReportsTypeErrorsFirstAndOnly) {
  kube::Object obj = testing::pi_job();
  obj["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = "many";
  obj["metadata"]["name"] = "1-not-a-dns-label";
  MPIJob job(obj);
  Strings errs;
  for (const auto& e : validate(job)) errs.push_back(e.to_string());
  EXPECT_EQ(errs, Strings{"spec.mpiReplicaSpecs.Worker.replicas: Invalid value: \"string\": must be of type integer"});
}

// The accessors themselves: an integer member out of range or fractional throws nlohmann's
// type_error naming it (no truncation, no undefined float-to-int conversion).
TEST(SchemaTypes, IntegerMembersThrowRatherThanTruncate) {
  const kube::Object o = {{"a", 2.5}, {"b", 1e42}, {"c", 5000000000LL}, {"d", 18446744073709551615ULL},
                          {"e", -7.0}, {"f", "7"}};
  EXPECT_THROW(member<int32_t>(o, "a"), kube::Object::type_error);
  EXPECT_THROW(member<int64_t>(o, "b"), kube::Object::type_error);
  EXPECT_THROW(member<int32_t>(o, "c"), kube::Object::type_error);
  EXPECT_EQ(member<int64_t>(o, "c"), 5000000000LL);
  EXPECT_THROW(member<int64_t>(o, "d"), kube::Object::type_error);
  EXPECT_EQ(member<int32_t>(o, "e"), -7);
  EXPECT_THROW(member<int32_t>(o, "f"), kube::Object::type_error);
  try {
    member<int32_t>(o, "a");
  } catch (const kube::Object::type_error& e) {
    EXPECT_NE(std::string(e.what()).find("a must be an integer from -2147483648 to 2147483647, not 2.5"),
              std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mpijob
