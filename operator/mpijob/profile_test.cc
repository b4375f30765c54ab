// Admin profiles: parsing, the precedence of the job's own values, the network settings, and
// what plan() does with them (pin at the first sync, refuse an unknown one).
#include "mpijob/profile.h"

#include <gtest/gtest.h>

#include "kube/clock.h"
#include "mpijob/builders.h"
#include "mpijob/defaults.h"
#include "mpijob/plan.h"
#include "mpijob/testing/fixtures.h"

namespace mpijob {
namespace {

using kube::Object;

const char* kA100 = R"({
  "image": "registry.example/train:1.0", "mpiImplementation": "Intel", "gpusPerWorker": 8,
  "workerResources": {"requests": {"cpu": "30", "memory": "200Gi"}, "limits": {"memory": "200Gi"}},
  "launcherResources": {"requests": {"cpu": "1"}},
  "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
  "nodeSelector": {"gpu": "a100", "zone": "z1"}, "schedulerName": "gpu-scheduler",
  "network": {"profile": "roce", "ncclIbHca": "mlx5_0", "rdmaResource": "rdma/roce: 1"}})";

Object a100() { return parse_profile("a100", kA100); }

// The pi job with nothing the profile fills: no image, impl, resources, selectors.
MPIJob bare_job() {
  Object j = testing::pi_job();
  j["spec"].erase("mpiImplementation");
  for (const char* t : {"Launcher", "Worker"}) {
    auto& c = j["spec"]["mpiReplicaSpecs"][t]["template"]["spec"]["containers"][0];
    c.erase("image");
    c.erase("resources");
  }
  j["spec"].erase("slotsPerWorker");
  return MPIJob(j);
}

Object& pod_spec(MPIJob& job, const char* t) {
  return job.json()["spec"]["mpiReplicaSpecs"][t]["template"]["spec"];
}

TEST(ParseProfile, AcceptsEveryFieldAndRejectsUnknownOnesNamingProfileAndField) {
  EXPECT_EQ(a100()["gpusPerWorker"], 8);
  const std::pair<const char*, const char*> bad[] = {
      {R"({"imagee": "x"})", "profile \"p\": imagee: unknown field"},
      {R"({"image": 3})", "profile \"p\": image: must be a non-empty string"},
      {R"({"mpiImplementation": "LAM"})", "mpiImplementation: must be OpenMPI, Intel or MPICH"},
      {R"({"gpusPerWorker": 1.5})", "gpusPerWorker: must be a whole number"},
      {R"({"gpusPerWorker": -1})", "gpusPerWorker: must be a whole number"},
      {R"({"workerResources": {"requets": {}}})", "workerResources.requets: unknown field"},
      {R"({"workerResources": {"limits": {"cpu": [1]}}})", "workerResources.limits.cpu: must be a quantity"},
      {R"({"tolerations": {"key": "x"}})", "tolerations: must be a list"},
      {R"({"nodeSelector": {"gpu": 1}})", "nodeSelector.gpu: must be a string"},
      {R"({"network": {"profile": "warp"}})", "network: unknown network profile \"warp\""},
      {R"({"network": {"hca": "mlx5_0"}})", "network.hca: unknown field"},
      {R"({"network": {"rdmaResource": ": 1"}})", "network: rdma resource \": 1\": want \"<name>: <count>\""},
      {R"(["image"])", "(value): must be a map"},
      {R"({"image": )", "(value): not valid JSON"},
  };
  for (const auto& [json, want] : bad) {
    try {
      parse_profile("p", json);
      ADD_FAILURE() << json << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  }
}

TEST(ProfileCatalog, KeepsInvalidEntriesApartAndListsAllNamesSorted) {
  Object cm = {{"data", {{"b-cpu", R"({"image": "cpu:1"})"}, {"a100", kA100}, {"broken", "{"}}}};
  ProfileCatalog c = profiles_from_config_map(cm);
  EXPECT_EQ(c.profiles.size(), 2u);
  ASSERT_EQ(c.invalid.count("broken"), 1u);
  EXPECT_NE(c.invalid["broken"].find("not valid JSON"), std::string::npos);
  EXPECT_EQ(profile_names(c), "a100, b-cpu, broken");
  EXPECT_EQ(profile_names(ProfileCatalog{}), "none are defined");
}

TEST(ProfileCatalog, ConfigMapDataFromAValuesFileOrTheProfilesMapAsTheChartRendersIt) {
  const Object profiles = {{"cpu", {{"image", "cpu:1"}, {"gpusPerWorker", 0}}}};
  const Object want = {{"cpu", R"({"gpusPerWorker":0,"image":"cpu:1"})"}};
  EXPECT_EQ(profiles_config_map_data(profiles), want);
  EXPECT_EQ(profiles_config_map_data({{"profiles", profiles}, {"replicaCount", 1}}), want);
  EXPECT_EQ(profiles_from_config_map({{"data", want}}).profiles.at("cpu")["image"], "cpu:1");
  try {
    profiles_config_map_data({{"gpu", {{"gpus", 8}}}});
    ADD_FAILURE() << "an unknown field was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "profile \"gpu\": gpus: unknown field (want image, mpiImplementation, "
                           "gpusPerWorker, workerResources, launcherResources, tolerations, "
                           "nodeSelector, schedulerName or network)");
  }
}

TEST(ApplyProfile, FillsEverythingAJobLeavesUnset) {
  MPIJob job = bare_job();
  apply_profile(a100(), job);
  apply_defaults(job);
  EXPECT_EQ(job.mpi_implementation(), MpiImplementation::Intel);
  EXPECT_EQ(job.slots(), 8);  // one rank per GPU, from the profile's gpusPerWorker
  for (const char* t : {"Launcher", "Worker"}) {
    const Object& spec = pod_spec(job, t);
    EXPECT_EQ(spec["containers"][0]["image"], "registry.example/train:1.0") << t;
    EXPECT_EQ(spec["schedulerName"], "gpu-scheduler") << t;
    EXPECT_EQ(spec["nodeSelector"], (Object{{"gpu", "a100"}, {"zone", "z1"}})) << t;
    EXPECT_EQ(spec["tolerations"].size(), 1u) << t;
  }
  const Object& worker = pod_spec(job, "Worker")["containers"][0]["resources"];
  EXPECT_EQ(worker["limits"], (Object{{"memory", "200Gi"}, {"nvidia.com/gpu", 8}}));
  EXPECT_EQ(worker["requests"], (Object{{"cpu", "30"}, {"memory", "200Gi"}}));
  EXPECT_EQ(pod_spec(job, "Launcher")["containers"][0]["resources"],
            (Object{{"requests", {{"cpu", "1"}}}}));
}

TEST(ApplyProfile, EveryValueTheJobSetsWins) {
  MPIJob job = bare_job();
  job.json()["spec"]["mpiImplementation"] = "MPICH";
  Object& w = pod_spec(job, "Worker");
  w["containers"][0]["image"] = "mine:2";
  w["containers"][0]["resources"] = {{"limits", {{"memory", "8Gi"}, {"nvidia.com/gpu", 2}}}};
  w["schedulerName"] = "default-scheduler";
  w["nodeSelector"] = {{"zone", "z9"}};
  w["tolerations"] = Object::array({{{"key", "mine"}, {"operator", "Exists"}}});
  apply_profile(a100(), job);
  apply_defaults(job);
  EXPECT_EQ(job.mpi_implementation(), MpiImplementation::MPICH);
  EXPECT_EQ(job.slots(), 2);
  EXPECT_EQ(w["containers"][0]["image"], "mine:2");
  EXPECT_EQ(w["schedulerName"], "default-scheduler");
  // Maps merge key by key, the job's key winning; a list the job sets replaces the profile's.
  EXPECT_EQ(w["nodeSelector"], (Object{{"gpu", "a100"}, {"zone", "z9"}}));
  EXPECT_EQ(w["tolerations"], Object::array({{{"key", "mine"}, {"operator", "Exists"}}}));
  // A resource the job names (memory, in limits) takes nothing from the profile, not even its
  // request; one it does not name (cpu) comes from the profile.
  EXPECT_EQ(w["containers"][0]["resources"]["limits"],
            (Object{{"memory", "8Gi"}, {"nvidia.com/gpu", 2}}));
  EXPECT_EQ(w["containers"][0]["resources"]["requests"], (Object{{"cpu", "30"}}));
  // The launcher, untouched by the job, still gets the profile's values.
  EXPECT_EQ(pod_spec(job, "Launcher")["containers"][0]["image"], "registry.example/train:1.0");
}

TEST(ProfileNetwork, ProfileOverOperatorDefaultAndJobAnnotationsOverBoth) {
  NetworkProfile op;
  op.kind = NetworkKind::Tcp;
  op.socket_ifname = "eth0";
  NetworkProfile p = profile_network(a100(), op);
  EXPECT_EQ(p.kind, NetworkKind::RoCE);
  EXPECT_EQ(p.ib_hca, "mlx5_0");
  EXPECT_EQ(p.socket_ifname, "eth0");  // the profile does not set it: the operator's
  Object j = testing::pi_job();
  j["metadata"]["annotations"] = {{kAnnotationNetworkProfile, "infiniband"},
                                  {kAnnotationNcclIbHca, "mlx5_3"}};
  NetworkProfile r = resolve_network_profile(MPIJob(j), p);
  EXPECT_EQ(r.kind, NetworkKind::InfiniBand);
  EXPECT_EQ(r.ib_hca, "mlx5_3");
  EXPECT_EQ(r.rdma_resource, "rdma/roce: 1");
}

// ---- plan(): pinning and refusal ----

struct ProfilePlan {
  Object job = bare_job().json();
  Observed observed;
  BuildOptions opts;
  testing::FixedKeyGenerator keys;
  Plan run() { return plan(job, observed, opts, keys, kube::parse_time("2026-01-01T02:00:00Z")); }
  void pick(const std::string& name) { job["metadata"]["annotations"][kAnnotationProfile] = name; }
  void catalog(Object data) { observed.profiles = profiles_from_config_map({{"data", data}}); }
  const Action* worker_create(const Plan& p) {
    for (const auto& a : p.actions) {
      if (a.what == "worker pod" && a.verb == Action::Verb::Create) return &a;
    }
    return nullptr;
  }
};

const Condition* failed(const Object& status) {
  static JobStatus s;
  s = status_from_json(status);
  return s.condition("Failed");
}

TEST(PlanProfile, FirstSyncPinsTheProfileInStatusAndBuildsPodsFromIt) {
  ProfilePlan c;
  c.pick("a100");
  c.catalog({{"a100", kA100}});
  Plan p = c.run();
  ASSERT_TRUE(p.status);
  EXPECT_EQ((*p.status)["profile"]["name"], "a100");
  EXPECT_EQ((*p.status)["profile"]["values"]["image"], "registry.example/train:1.0");
  const Action* w = c.worker_create(p);
  ASSERT_NE(w, nullptr);
  const Object& main = w->object["spec"]["containers"][0];
  EXPECT_EQ(main["image"], "registry.example/train:1.0");
  EXPECT_EQ(main["resources"]["limits"]["nvidia.com/gpu"], 8);
  EXPECT_EQ(main["resources"]["limits"]["rdma/roce"], "1");  // the profile's RoCE network
  EXPECT_EQ(w->object["spec"]["schedulerName"], "gpu-scheduler");
}

TEST(PlanProfile, APinnedProfileIsUsedWhateverTheCatalogSaysNow) {
  ProfilePlan c;
  c.pick("a100");
  c.job["status"]["profile"] = {{"name", "a100"}, {"values", {{"image", "pinned:1"}}}};
  c.catalog({{"a100", R"({"image": "edited:2"})"}});
  Plan p = c.run();
  const Action* w = c.worker_create(p);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->object["spec"]["containers"][0]["image"], "pinned:1");
  c.observed.profiles = ProfileCatalog{};  // the profile was deleted since
  EXPECT_EQ(c.worker_create(c.run())->object["spec"]["containers"][0]["image"], "pinned:1");
}

TEST(PlanProfile, AnUnknownProfileFailsTheJobNamingTheProfilesThatExist) {
  ProfilePlan c;
  c.pick("a10O");
  c.catalog({{"a100", kA100}, {"cpu", R"({"image": "cpu:1"})"}});
  Plan p = c.run();
  ASSERT_TRUE(p.status);
  const Condition* f = failed(*p.status);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->status, "True");
  EXPECT_EQ(f->reason, kReasonUnknownProfile);
  EXPECT_EQ(f->message, "metadata.annotations[korovod.io/profile]: profile \"a10O\" does not "
                        "exist; profiles: a100, cpu");
  EXPECT_EQ(c.worker_create(p), nullptr);
  EXPECT_FALSE((*p.status).contains("profile"));
}

TEST(PlanProfile, NoProfilesConfiguredAndAnInvalidProfileAreRefusedToo) {
  ProfilePlan none;
  none.pick("a100");
  const Condition* f = failed(*none.run().status);
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->message.find("this operator has no profiles"), std::string::npos) << f->message;

  ProfilePlan invalid;
  invalid.pick("gpu");
  invalid.catalog({{"gpu", R"({"gpus": 8})"}});
  f = failed(*invalid.run().status);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->reason, kReasonInvalidProfile);
  EXPECT_NE(f->message.find("profile \"gpu\": gpus: unknown field"), std::string::npos) << f->message;
}

TEST(PlanProfile, AJobWithoutTheAnnotationIsBuiltAsBefore) {
  ProfilePlan c;
  c.job = testing::pi_job();
  c.catalog({{"a100", kA100}});
  Plan p = c.run();
  ASSERT_TRUE(p.status);
  EXPECT_FALSE((*p.status).contains("profile"));
  EXPECT_EQ(c.worker_create(p)->object["spec"]["containers"][0]["image"],
            "mpioperator/mpi-pi:openmpi");
}

}  // namespace
}  // namespace mpijob
