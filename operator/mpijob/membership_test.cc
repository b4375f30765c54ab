// Elastic membership: discover_hosts.sh content, the elastic switch, WorkersChanged events and
// the status fields behind the scale subresource, through plan() as the reconciler runs it.
#include <gtest/gtest.h>

#include "kube/clock.h"
#include "kube/object_meta.h"
#include "mpijob/builders.h"
#include "mpijob/defaults.h"
#include "mpijob/membership.h"
#include "mpijob/plan.h"
#include "mpijob/testing/fixtures.h"
#include "mpijob/validation.h"

namespace mpijob {
namespace {

const auto kNow = kube::parse_time("2026-01-01T02:00:00Z");

MPIJob defaulted(kube::Object obj) {
  MPIJob job(std::move(obj));
  apply_defaults(job);
  return job;
}

kube::Object elastic_job(int workers) {
  kube::Object obj = testing::pi_job(workers);
  auto& c = obj["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0];
  c["command"] = {"korovodrun"};
  c["args"] = {"--min-np", "1", "--host-discovery-script", "/etc/mpi/discover_hosts.sh", "python3", "t.py"};
  return obj;
}

kube::Object not_ready(kube::Object pod) {
  pod["status"]["conditions"] = {{{"type", "Ready"}, {"status", "False"}}};
  return pod;
}

kube::Object deleting(kube::Object pod) {
  pod["metadata"]["deletionTimestamp"] = "2026-01-01T01:59:00Z";
  return pod;
}

TEST(Membership, DiscoverHostsListsRunningReadyWorkersWithSlots) {
  kube::Object obj = testing::pi_job(5);
  obj["spec"]["slotsPerWorker"] = 2;
  const MPIJob job = defaulted(obj);
  const std::vector<kube::Object> pods = {
      testing::worker("pi", 3, "Running"), not_ready(testing::worker("pi", 1, "Running")),
      testing::worker("pi", 2, "Pending"), deleting(testing::worker("pi", 4, "Running")),
      testing::worker("pi", 0, "Running")};
  EXPECT_EQ(listed_workers(job, pods), (std::vector<std::string>{"pi-worker-0", "pi-worker-3"}));
  EXPECT_EQ(discover_hosts(job, pods, {}),
            "#!/bin/sh\necho pi-worker-0.pi.default.svc:2\necho pi-worker-3.pi.default.svc:2\n");
}

TEST(Membership, WorkerAboveReplicasLeavesTheListBeforeItIsDeleted) {
  const MPIJob job = defaulted(testing::pi_job(1));
  const std::vector<kube::Object> pods = {testing::worker("pi", 0, "Running"),
                                          testing::worker("pi", 1, "Running")};
  EXPECT_EQ(listed_workers(job, pods), (std::vector<std::string>{"pi-worker-0"}));
}

TEST(Membership, LauncherAsWorkerIsListedFirstWithTheClusterDomain) {
  kube::Object obj = testing::pi_job(1);
  obj["spec"]["runLauncherAsWorker"] = true;
  BuildOptions opts;
  opts.cluster_domain = "c.local";
  EXPECT_EQ(discover_hosts(defaulted(obj), {testing::worker("pi", 0, "Running")}, opts),
            "#!/bin/sh\necho pi-launcher.pi.default.svc.c.local:1\n"
            "echo pi-worker-0.pi.default.svc.c.local:1\n");
}

TEST(Membership, ElasticFromTheLauncherCommandOrTheAnnotation) {
  EXPECT_TRUE(is_elastic(defaulted(elastic_job(2))));
  EXPECT_FALSE(is_elastic(defaulted(testing::pi_job(2))));
  kube::Object in_shell = testing::pi_job(2);
  in_shell["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"] =
      {"sh", "-c", "horovodrun -np 2 --host-discovery-script /etc/mpi/discover_hosts.sh python t.py"};
  EXPECT_TRUE(is_elastic(defaulted(in_shell)));
  kube::Object opted_out = elastic_job(2);
  opted_out["metadata"]["annotations"][kAnnotationElastic] = "false";
  EXPECT_FALSE(is_elastic(defaulted(opted_out)));
  kube::Object opted_in = testing::pi_job(2);
  opted_in["metadata"]["annotations"][kAnnotationElastic] = "true";
  EXPECT_TRUE(is_elastic(defaulted(opted_in)));
}

TEST(Membership, ElasticAnnotationMustBeTrueOrFalse) {
  kube::Object obj = testing::pi_job(2);
  obj["metadata"]["annotations"][kAnnotationElastic] = "yes";
  const auto errs = validate(defaulted(obj));
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].to_string(),
            "metadata.annotations[korovod.io/elastic]: Unsupported value: \"yes\": supported "
            "values: \"true\", \"false\"");
}

TEST(Membership, WorkersInScriptReadsBackWhatDiscoverHostsWrote) {
  const MPIJob job = defaulted(testing::pi_job(3));
  const std::string script = discover_hosts(
      job, {testing::worker("pi", 2, "Running"), testing::worker("pi", 0, "Running")}, {});
  EXPECT_EQ(workers_in_script(script), (std::vector<std::string>{"pi-worker-0", "pi-worker-2"}));
  // mpi-operator's format (no slots) and an empty list read too.
  EXPECT_EQ(workers_in_script("#!/bin/sh\necho a-worker-1.a.ns.svc\n"), (std::vector<std::string>{"a-worker-1"}));
  EXPECT_TRUE(workers_in_script("#!/bin/sh\n").empty());
}

TEST(Membership, EventNamesWhoCameAndWent) {
  EXPECT_FALSE(membership_event({"a", "b"}, {"b", "a"}));
  auto e = membership_event({"w-0", "w-1"}, {"w-0", "w-1", "w-2"});
  ASSERT_TRUE(e);
  EXPECT_EQ(*e, (Event{"Normal", "WorkersChanged", "2 -> 3 workers (added w-2)"}));
  e = membership_event({"w-0", "w-1", "w-2"}, {"w-0"});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message, "3 -> 1 workers (removed w-1, w-2)");
  e = membership_event({"w-0", "w-1"}, {"w-0", "w-2"});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message, "2 -> 2 workers (added w-2; removed w-1)");
}

// One sync of a running job whose ConfigMap was written for `listed` workers.
struct Sync {
  kube::Object job;
  Observed observed;
  testing::FixedKeyGenerator keys;

  Sync(kube::Object j, const std::vector<kube::Object>& pods, const std::vector<kube::Object>& listed)
      : job(std::move(j)) {
    const MPIJob m = defaulted(job);
    auto owned = [](kube::Object o) {
      o["metadata"]["uid"] = "uid-" + o["metadata"]["name"].get<std::string>();
      return o;
    };
    observed.service = owned(build_service(m));
    observed.config_map = owned(build_config_map(m, listed, {}));
    observed.secret = owned(build_ssh_secret(m, keys.generate()));
    observed.launcher_job = testing::launcher_job("pi");
    observed.worker_pods = pods;
    keys.calls = 0;
  }
  Plan run() { return plan(job, observed, {}, keys, kNow); }
};

const Action* config_map_update(const Plan& p) {
  for (const auto& a : p.actions) {
    if (a.verb == Action::Verb::Update && a.resource == kube::resources::kConfigMaps) return &a;
  }
  return nullptr;
}

TEST(Membership, ElasticJobRecordsWorkersChangedWhenTheConfigMapIsWritten) {
  const std::vector<kube::Object> two = {testing::worker("pi", 0, "Running"),
                                         testing::worker("pi", 1, "Running")};
  std::vector<kube::Object> three = two;
  three.push_back(testing::worker("pi", 2, "Running"));
  Sync s(elastic_job(3), three, two);
  const Plan p = s.run();
  const Action* a = config_map_update(p);
  ASSERT_NE(a, nullptr);
  EXPECT_NE(a->object["data"]["discover_hosts.sh"].get<std::string>().find("pi-worker-2.pi.default.svc:1"),
            std::string::npos);
  ASSERT_TRUE(a->event_on_success);
  EXPECT_EQ(a->event_on_success->message, "2 -> 3 workers (added pi-worker-2)");
  // Not among the events recorded before the writes: only a written change is reported.
  for (const auto& e : p.events) EXPECT_NE(e.reason, kReasonWorkersChanged);
  ASSERT_TRUE(p.status);
  EXPECT_EQ((*p.status)["readyWorkers"], 3);
}

TEST(Membership, FailedWorkerLeavesTheListAndIsReplaced) {
  std::vector<kube::Object> pods = {testing::worker("pi", 0, "Running"),
                                    testing::worker("pi", 1, "Failed")};
  Sync s(elastic_job(2), pods,
         {testing::worker("pi", 0, "Running"), testing::worker("pi", 1, "Running")});
  const Plan p = s.run();
  const Action* a = config_map_update(p);
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(a->event_on_success);
  EXPECT_EQ(a->event_on_success->message, "2 -> 1 workers (removed pi-worker-1)");
  bool deleted = false;  // deleted now, recreated by the next sync (ensure_workers)
  for (const auto& act : p.actions) {
    deleted = deleted ||
              (act.verb == Action::Verb::Delete && kube::name_of(act.object) == "pi-worker-1");
    EXPECT_NE(act.resource, kube::resources::kJobs) << "the launcher is never touched";
  }
  EXPECT_TRUE(deleted);
}

TEST(Membership, NonElasticJobUpdatesTheScriptWithoutEvents) {
  Sync s(testing::pi_job(2), {testing::worker("pi", 0, "Running"), testing::worker("pi", 1, "Running")}, {});
  const Plan p = s.run();
  const Action* a = config_map_update(p);
  ASSERT_NE(a, nullptr);
  EXPECT_FALSE(a->event_on_success);
}

TEST(Membership, ScalingReplicasTouchesWorkersOnlyNeverTheLauncher) {
  const std::vector<kube::Object> two = {testing::worker("pi", 0, "Running"),
                                         testing::worker("pi", 1, "Running")};
  Sync up(elastic_job(4), two, two);
  // The ConfigMap as the 2-worker job wrote it (its hostfile names two workers).
  (*up.observed.config_map)["data"] = build_config_map(defaulted(elastic_job(2)), two, {})["data"];
  const Plan p = up.run();
  std::vector<std::string> created;
  for (const auto& a : p.actions) {
    EXPECT_NE(a.resource, kube::resources::kJobs);
    if (a.verb == Action::Verb::Create) created.push_back(kube::name_of(a.object));
  }
  EXPECT_EQ(created, (std::vector<std::string>{"pi-worker-2", "pi-worker-3"}));
  ASSERT_NE(config_map_update(p), nullptr) << "the hostfile names 4 workers now";
  EXPECT_FALSE(config_map_update(p)->event_on_success) << "hostfile changed, the list did not";

  Sync down(elastic_job(1), two, two);
  (*down.observed.config_map)["data"] = build_config_map(defaulted(elastic_job(2)), two, {})["data"];
  const Plan q = down.run();
  std::vector<std::string> deleted;
  for (const auto& a : q.actions) {
    EXPECT_NE(a.resource, kube::resources::kJobs);
    if (a.verb == Action::Verb::Delete) deleted.push_back(kube::name_of(a.object));
  }
  EXPECT_EQ(deleted, (std::vector<std::string>{"pi-worker-1"}));
  ASSERT_TRUE(config_map_update(q));
  ASSERT_TRUE(config_map_update(q)->event_on_success);
  EXPECT_EQ(config_map_update(q)->event_on_success->message, "2 -> 1 workers (removed pi-worker-1)");
  EXPECT_FALSE(is_finished(status_from_json(*q.status)));
}

TEST(Membership, StatusCarriesTheWorkerSelectorForTheScaleSubresource) {
  const std::vector<kube::Object> pods = {testing::worker("pi", 0, "Running"),
                                          not_ready(testing::worker("pi", 1, "Running"))};
  Sync s(elastic_job(2), pods, {testing::worker("pi", 0, "Running")});
  const Plan p = s.run();
  ASSERT_TRUE(p.status);
  const auto& w = (*p.status)["replicaStatuses"]["Worker"];
  EXPECT_EQ(w["selector"], "training.kubeflow.org/job-name=pi,training.kubeflow.org/job-role=worker");
  EXPECT_EQ(w["active"], 2);
  EXPECT_EQ((*p.status)["readyWorkers"], 1);
  EXPECT_EQ(status_to_json(status_from_json(*p.status)), *p.status);
}

TEST(Membership, FinishedJobHasNoReadyWorkers) {
  Sync s(elastic_job(2), {testing::worker("pi", 0, "Running")}, {testing::worker("pi", 0, "Running")});
  s.job["status"] = {{"conditions", {{{"type", "Succeeded"}, {"status", "True"}}}},
                     {"completionTime", "2026-01-01T01:00:00Z"},
                     {"readyWorkers", 1}};
  const Plan p = s.run();
  ASSERT_TRUE(p.status);
  EXPECT_FALSE(p.status->contains("readyWorkers"));
}

}  // namespace
}  // namespace mpijob
