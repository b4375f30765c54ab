// The objects korovod builds, checked field by field against what Kubeflow's mpi-operator v0.8
// puts there: testdata/mpi-operator-v0.8-objects.json, written from the reference's source (see
// its "about"). Unlike the goldens, nothing here comes from korovod's own output.
#include <gtest/gtest.h>

#include <string>

#include "mpijob/builders.h"
#include "mpijob/defaults.h"
#include "mpijob/testing/fixtures.h"

namespace mpijob {
namespace {

using kube::Object;

Object semantics() {
  return testing::read_json_file(std::string(KOROVOD_MPIJOB_TESTDATA) +
                                 "/mpi-operator-v0.8-objects.json");
}

// Every object korovod makes for the case's job, by the names the data file uses.
Object build_case(const Object& c) {
  Object obj = testing::pi_job(2, "OpenMPI");
  obj.merge_patch(c.at("patch"));
  if (c.contains("worker_command")) {
    auto& container = obj["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0];
    container.erase("command");
    container.erase("args");
  }
  MPIJob job(obj);
  apply_defaults(job);
  BuildOptions opts;
  if (c.contains("cluster_domain")) opts.cluster_domain = c["cluster_domain"].get<std::string>();
  testing::FixedKeyGenerator keys;
  const std::vector<Object> pods = {testing::worker("pi", 0, "Running"),
                                    testing::worker("pi", 1, "Running")};
  return {{"service", build_service(job)},
          {"configMap", build_config_map(job, pods, opts)},
          {"secret", build_ssh_secret(job, keys.generate())},
          {"launcherJob", build_launcher_job(job, opts)},
          {"worker0", build_worker_pod(job, 0, opts)},
          {"worker1", build_worker_pod(job, 1, opts)}};
}

const Object* named(const Object& array, const std::string& name) {
  if (!array.is_array()) return nullptr;
  for (const auto& e : array) {
    if (e.is_object() && e.value("name", "") == name) return &e;
  }
  return nullptr;
}

// "" when the assertion holds, else what was found.
std::string check(const Object& object, const Object& a) {
  const Object::json_pointer at(a.at("at").get<std::string>());
  const bool present = object.contains(at);
  if (a.contains("named")) {
    const std::string name = a["named"].get<std::string>();
    const Object* e = present ? named(object.at(at), name) : nullptr;
    if (a.value("absent", false)) return e == nullptr ? "" : "found " + e->dump();
    if (e == nullptr) return "no element named " + name;
    return *e == a.at("equals") ? "" : "found " + e->dump();
  }
  if (a.value("absent", false)) return present ? "found " + object.at(at).dump() : "";
  if (!present) return "nothing there";
  const Object& v = object.at(at);
  if (a.contains("equals")) return v == a["equals"] ? "" : "found " + v.dump();
  if (a.contains("has_keys")) {
    for (const auto& k : a["has_keys"]) {
      if (!v.is_object() || !v.contains(k.get<std::string>())) return "no key " + k.dump();
    }
    return "";
  }
  if (a.contains("names_in_order")) {
    size_t next = 0;
    for (const auto& want : a["names_in_order"]) {
      while (next < v.size() && v[next].value("name", "") != want.at("name")) ++next;
      if (next == v.size()) return want["name"].dump() + " missing or out of order in " + v.dump();
      const Object& got = v[next++];
      if (got.contains("value") != want.contains("value") ||
          (want.contains("value") && got["value"] != want["value"])) {
        return "found " + got.dump() + ", want " + want.dump();
      }
    }
    return "";
  }
  return "the assertion names no check";
}

TEST(Semantics, EveryObjectMatchesMpiOperatorV08) {
  const Object data = semantics();
  int checked = 0;
  for (const auto& c : data.at("cases")) {
    const std::string name = c.at("name").get<std::string>();
    const Object built = build_case(c);
    for (const auto& [object, asserts] : c.at("expect").items()) {
      ASSERT_TRUE(built.contains(object)) << name << ": no object " << object << " in the data";
      for (const auto& a : asserts) {
        const std::string problem = check(built[object], a);
        EXPECT_EQ(problem, "") << "case '" << name << "', " << object << " " << a.at("at")
                               << " (" << a.at("why").get<std::string>() << "): " << problem;
        ++checked;
      }
    }
  }
  // The file is the contract: an empty or truncated one must not pass.
  EXPECT_GE(checked, 60) << "assertions checked";
}

// The checker itself: each kind of assertion fails on a value that breaks it.
TEST(Semantics, TheCheckerRejectsWhatBreaksEachKindOfAssertion) {
  const Object pod = {{"spec",
                       {{"env", {{{"name", "A"}, {"value", "1"}}, {{"name", "B"}}}},
                        {"hostname", "h"}}}};
  EXPECT_NE(check(pod, {{"at", "/spec/hostname"}, {"equals", "x"}}), "");
  EXPECT_EQ(check(pod, {{"at", "/spec/hostname"}, {"equals", "h"}}), "");
  EXPECT_NE(check(pod, {{"at", "/spec/hostname"}, {"absent", true}}), "");
  EXPECT_NE(check(pod, {{"at", "/spec/nothing"}, {"equals", "h"}}), "");
  EXPECT_NE(check(pod, {{"at", "/spec/env"}, {"named", "A"}, {"absent", true}}), "");
  EXPECT_NE(check(pod, {{"at", "/spec/env"}, {"named", "C"}, {"equals", Object::object()}}), "");
  EXPECT_NE(check(pod, {{"at", "/spec/env"},
                        {"names_in_order", {{{"name", "B"}}, {{"name", "A"}, {"value", "1"}}}}}),
            "");
  EXPECT_NE(check(pod, {{"at", "/spec/env"}, {"names_in_order", {{{"name", "A"}}}}}), "");
  EXPECT_NE(check(pod, {{"at", "/spec/env"}, {"names_in_order", {{{"name", "B"}, {"value", ""}}}}}),
            "");
  EXPECT_EQ(check(pod, {{"at", "/spec/env"},
                        {"names_in_order", {{{"name", "A"}, {"value", "1"}}, {{"name", "B"}}}}}),
            "");
  EXPECT_NE(check(pod, {{"at", "/spec"}, {"has_keys", {"env", "x"}}}), "");
  EXPECT_NE(check(pod, {{"at", "/spec"}}), "");
}

}  // namespace
}  // namespace mpijob
