// plan(): one sync as data — which objects get written, in what order, and the status.
#include <gtest/gtest.h>

#include "kube/clock.h"
#include "kube/object_meta.h"
#include "mpijob/builders.h"
#include "mpijob/defaults.h"
#include "mpijob/plan.h"
#include "mpijob/testing/fixtures.h"

namespace mpijob {
namespace {

using Verb = Action::Verb;
const auto kNow = kube::parse_time("2026-01-01T02:00:00Z");

struct PlanCase {
  kube::Object job = testing::pi_job();
  Observed observed;
  BuildOptions opts;
  testing::FixedKeyGenerator keys;
  Plan run() { return plan(job, observed, opts, keys, kNow); }

  // Observe everything the job would have created (ours, with the given worker phases).
  void observe_created(const std::string& worker_phase) {
    MPIJob j(job);
    apply_defaults(j);
    auto owned = [](kube::Object o) {
      o["metadata"]["uid"] = "uid-" + o["metadata"]["name"].get<std::string>();
      return o;
    };
    observed.service = owned(build_service(j));
    for (int i = 0; i < j.replicas(ReplicaType::Worker); ++i) {
      kube::Object p = owned(build_worker_pod(j, i, opts));
      p["status"] = testing::worker("pi", i, worker_phase)["status"];
      observed.worker_pods.push_back(p);
    }
    observed.config_map = owned(build_config_map(j, observed.worker_pods, opts));
    observed.secret = owned(build_ssh_secret(j, keys.generate()));
    keys.calls = 0;
  }
};

std::vector<std::string> summary(const Plan& p) {
  std::vector<std::string> out;
  const char* verbs[] = {"create", "update", "update-status", "delete"};
  for (const auto& a : p.actions) {
    out.push_back(std::string(verbs[static_cast<int>(a.verb)]) + " " + a.resource.resource + "/" +
                  kube::name_of(a.object));
  }
  return out;
}

TEST(Plan, NewJobCreatesEverythingAndIsCreated) {
  PlanCase c;
  Plan p = c.run();
  EXPECT_EQ(summary(p), (std::vector<std::string>{
                            "create services/pi", "create configmaps/pi-config", "create secrets/pi-ssh",
                            "create pods/pi-worker-0", "create pods/pi-worker-1", "create jobs/pi-launcher"}));
  ASSERT_TRUE(p.status);
  EXPECT_EQ((*p.status)["conditions"][0]["type"], "Created");
  EXPECT_EQ((*p.status)["conditions"][0]["message"], "MPIJob default/pi is created.");
  EXPECT_EQ((*p.status)["startTime"], "2026-01-01T02:00:00Z");
  EXPECT_EQ(p.events.at(0).reason, "MPIJobCreated");
  EXPECT_EQ(p.counters, std::vector<Counter>{Counter::JobsCreated});
  EXPECT_EQ(c.keys.calls, 1);
}

TEST(Plan, SteadyStateWritesNothing) {
  PlanCase c;
  c.observe_created("Running");
  c.observed.launcher_job = testing::launcher_job("pi");
  c.observed.launcher_pods = {testing::pod("pi-launcher-x", "Running", "launcher-uid")};
  c.job["status"] = *c.run().status;
  Plan p = c.run();
  EXPECT_TRUE(p.actions.empty()) << ::testing::PrintToString(summary(p));
  EXPECT_FALSE(p.status.has_value()) << p.status->dump();
  EXPECT_TRUE(p.events.empty());
  EXPECT_EQ(c.keys.calls, 0) << "key material is never regenerated";
}

TEST(Plan, WaitForWorkersReadyHoldsTheLauncherBack) {
  PlanCase c;
  c.job["spec"]["launcherCreationPolicy"] = "WaitForWorkersReady";
  c.observe_created("Pending");
  EXPECT_TRUE(summary(c.run()).empty());
  c.observed.worker_pods.clear();
  c.observe_created("Running");
  EXPECT_EQ(summary(c.run()), std::vector<std::string>{"create jobs/pi-launcher"});
}

TEST(Plan, ObjectOwnedBySomeoneElseIsNotTouched) {
  PlanCase c;
  c.observed.service = testing::pod("pi", "", "someone-else");
  Plan p = c.run();
  EXPECT_TRUE(p.actions.empty());
  ASSERT_TRUE(p.error);
  EXPECT_EQ(*p.error, "Resource \"pi\" of Kind \"Service\" already exists and is not managed by MPIJob");
  EXPECT_EQ(p.events.back().reason, "ErrResourceExists");
}

TEST(Plan, ManagedByAnotherControllerIsSkipped) {
  PlanCase c;
  c.job["spec"]["runPolicy"]["managedBy"] = "kueue.x-k8s.io/multikueue";
  Plan p = c.run();
  EXPECT_TRUE(p.skip);
  EXPECT_TRUE(p.actions.empty());
  EXPECT_FALSE(p.status);
}

TEST(Plan, ValidationErrorFailsTheJob) {
  PlanCase c;
  c.job["metadata"]["name"] = "1-foo";
  Plan p = c.run();
  EXPECT_TRUE(p.actions.empty());
  ASSERT_TRUE(p.status);
  const auto& cond = (*p.status)["conditions"].back();
  EXPECT_EQ(cond["type"], "Failed");
  EXPECT_EQ(cond["reason"], "ValidationError");
  EXPECT_EQ(cond["message"].get<std::string>().rfind("Found validation errors: metadata.name", 0), 0u);
  EXPECT_EQ(p.events.at(0).reason, "ValidationError");
}

TEST(Plan, ScaleDownDeletesExtraWorkersAndUpdatesHosts) {
  PlanCase c;
  c.job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 3;
  c.observe_created("Running");
  c.job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 1;
  c.observed.launcher_job = testing::launcher_job("pi");
  Plan p = c.run();
  EXPECT_EQ(summary(p), (std::vector<std::string>{"update configmaps/pi-config", "delete pods/pi-worker-1",
                                                  "delete pods/pi-worker-2"}));
}

TEST(Plan, FinishedJobCleansRunningWorkersAndExpiresAfterTtl) {
  PlanCase c;
  c.observe_created("Running");
  c.observed.worker_pods[1]["status"]["phase"] = "Succeeded";
  c.job["status"] = {{"conditions", {{{"type", "Succeeded"}, {"status", "True"}}}},
                     {"completionTime", "2026-01-01T01:59:30Z"}};
  Plan p = c.run();  // ttl 60s: 30s left
  EXPECT_EQ(summary(p), std::vector<std::string>{"delete pods/pi-worker-0"});
  EXPECT_EQ(p.requeue_after, std::chrono::seconds(30));
  c.job["status"]["completionTime"] = "2026-01-01T01:58:00Z";
  EXPECT_EQ(summary(c.run()).back(), "delete mpijobs/pi");
}

TEST(Plan, SuspendedJobSuspendsLauncherAndDeletesWorkers) {
  PlanCase c;
  c.observe_created("Running");
  c.observed.launcher_job = testing::launcher_job("pi");
  c.job["spec"]["runPolicy"]["suspend"] = true;
  Plan p = c.run();
  EXPECT_EQ(summary(p), (std::vector<std::string>{"update jobs/pi-launcher", "delete pods/pi-worker-0",
                                                  "delete pods/pi-worker-1"}));
  EXPECT_EQ(p.actions[0].object["spec"]["suspend"], true);
}

TEST(Plan, ResumeClearsJobStartTimeThenUnsuspendsWithSchedulingDirectives) {
  PlanCase c;
  c.observe_created("Running");
  kube::Object launcher = testing::launcher_job("pi");
  launcher["spec"]["suspend"] = true;
  launcher["spec"]["template"]["spec"]["nodeSelector"] = {{"old", "x"}};
  launcher["status"]["startTime"] = "2026-01-01T00:00:00Z";
  c.observed.launcher_job = launcher;
  c.job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["nodeSelector"] = {{"zone", "a"}};
  Plan p = c.run();
  ASSERT_EQ(summary(p), (std::vector<std::string>{"update-status jobs/pi-launcher", "update jobs/pi-launcher"}));
  EXPECT_FALSE(p.actions[0].object["status"].contains("startTime"));
  EXPECT_EQ(p.actions[1].object["spec"]["suspend"], false);
  EXPECT_EQ(p.actions[1].object["spec"]["template"]["spec"]["nodeSelector"], kube::Object({{"zone", "a"}}));
}

TEST(Plan, FailedWorkerIsDeletedForRestartAfterStatusCountsIt) {
  PlanCase c;
  c.observe_created("Running");
  c.observed.launcher_job = testing::launcher_job("pi");
  c.observed.worker_pods[1]["status"] = {{"phase", "Failed"}};
  Plan p = c.run();
  EXPECT_EQ(summary(p), (std::vector<std::string>{"update configmaps/pi-config", "delete pods/pi-worker-1"}));
  EXPECT_EQ(p.actions[1].object["metadata"]["uid"], "uid-pi-worker-1");
  ASSERT_TRUE(p.status);
  EXPECT_EQ((*p.status)["restartCount"], 1);
  EXPECT_EQ((*p.status)["restartedPodUIDs"], kube::Object({"uid-pi-worker-1"}));
}

TEST(Plan, GangSchedulingCreatesPodGroupBeforeWorkers) {
  PlanCase c;
  c.opts.gang_scheduler = "volcano";
  auto s = summary(c.run());
  EXPECT_EQ(s.at(3), "create podgroups/pi");
  EXPECT_EQ(s.at(4), "create pods/pi-worker-0");
}

}  // namespace
}  // namespace mpijob
