// Unit tests of the controller wiring: owner mapping, metrics text, log lines, and the Manager
// end to end against a MemoryClient (the local-mode configuration, and with leader election).
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "controller/log.h"
#include "controller/manager.h"
#include "controller/metrics.h"
#include "controller/owner_mapping.h"
#include "controller/preflight.h"
#include "kube/leader_election.h"
#include "kube/memory_client.h"
#include "kube/object_meta.h"
#include "mpijob/testing/fixtures.h"

namespace controller {
namespace {

kube::Object owned(const std::string& name, const std::string& api, const std::string& kind,
                   const std::string& owner, const std::string& uid = "u1") {
  return {{"metadata",
           {{"name", name},
            {"namespace", "ns"},
            {"uid", name + "-uid"},
            {"ownerReferences",
             {{{"apiVersion", api}, {"kind", kind}, {"name", owner}, {"uid", uid},
               {"controller", true}}}}}}};
}

TEST(OwnerMapping, DirectMPIJobOwner) {
  EXPECT_EQ(owning_mpijob_key(owned("pi-config", "kubeflow.org/v2beta1", "MPIJob", "pi"), nullptr),
            "ns/pi");
}

TEST(OwnerMapping, OtherVersionsAndKindsAreIgnored) {
  EXPECT_EQ(owning_mpijob_key(owned("x", "kubeflow.org/v1", "MPIJob", "pi"), nullptr),
            std::nullopt);
  EXPECT_EQ(owning_mpijob_key(owned("x", "apps/v1", "ReplicaSet", "rs"), nullptr), std::nullopt);
  kube::Object no_owner = {{"metadata", {{"name", "x"}, {"namespace", "ns"}}}};
  EXPECT_EQ(owning_mpijob_key(no_owner, nullptr), std::nullopt);
}

TEST(OwnerMapping, LauncherPodGoesThroughItsJob) {
  const kube::Object job = owned("pi-launcher", "kubeflow.org/v2beta1", "MPIJob", "pi");
  const kube::Object pod = owned("pi-launcher-abc", "batch/v1", "Job", "pi-launcher",
                                 "pi-launcher-uid");
  JobLookup lookup = [&](const std::string& ns, const std::string& name) -> std::optional<kube::Object> {
    if (ns == "ns" && name == "pi-launcher") return job;
    return std::nullopt;
  };
  EXPECT_EQ(owning_mpijob_key(pod, lookup), "ns/pi");
  // A Job of the same name with another uid is not the pod's owner.
  const kube::Object stale = owned("pi-launcher-abc", "batch/v1", "Job", "pi-launcher", "other");
  EXPECT_EQ(owning_mpijob_key(stale, lookup), std::nullopt);
  // Without a lookup (not a pod), a Job owner is not followed.
  EXPECT_EQ(owning_mpijob_key(pod, nullptr), std::nullopt);
}

TEST(Metrics, RendersReferenceNamesAndExtras) {
  OperatorMetrics m;
  m.jobs_created();
  m.jobs_created();
  m.jobs_failed();
  m.set_leader(true);
  m.set_job_info("ns", "pi", "pi-launcher");
  m.observe_reconcile(std::chrono::milliseconds(3));
  m.set_queue_depth([] { return size_t{7}; });
  const std::string text = m.render();
  EXPECT_NE(text.find("mpi_operator_jobs_created_total 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("mpi_operator_jobs_successful_total 0\n"), std::string::npos);
  EXPECT_NE(text.find("mpi_operator_jobs_failed_total 1\n"), std::string::npos);
  EXPECT_NE(text.find("mpi_operator_is_leader 1\n"), std::string::npos);
  EXPECT_NE(text.find("mpi_operator_job_info{launcher=\"pi-launcher\",namespace=\"ns\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("mpi_operator_reconcile_duration_seconds_bucket{le=\"0.005\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("mpi_operator_reconcile_duration_seconds_count 1\n"), std::string::npos);
  EXPECT_NE(text.find("mpi_operator_workqueue_depth 7\n"), std::string::npos);
  m.remove_job_info("ns", "pi");
  EXPECT_EQ(m.render().find("pi-launcher"), std::string::npos);
}

TEST(Log, TextAndJson) {
  kube::RealClock clock;
  std::ostringstream out;
  Logger text(out, LogFormat::Text, LogLevel::Info, clock);
  const std::string t = text.format(LogLevel::Info, "reconcile failed",
                                    {{"mpijob", "ns/pi"}, {"error", "a \"b\""}});
  EXPECT_NE(t.find(" level=info msg=\"reconcile failed\" mpijob=ns/pi error=\"a \\\"b\\\"\""),
            std::string::npos) << t;
  Logger json(out, LogFormat::Json, LogLevel::Info, clock);
  const auto j = nlohmann::json::parse(json.format(LogLevel::Warning, "m", {{"k", "v"}}));
  EXPECT_EQ(j["level"], "warning");
  EXPECT_EQ(j["msg"], "m");
  EXPECT_EQ(j["k"], "v");
  text.debug("hidden");
  EXPECT_TRUE(out.str().empty());
  EXPECT_THROW(parse_log_format("xml"), std::invalid_argument);
}

// Every verb the operator needs is granted by the chart's RBAC (the list its tests check).
TEST(Preflight, NeededPermissionsAreInTheChartsRbacList) {
  std::ifstream in(std::string(KOROVOD_SOURCE_DIR) + "/tests/integration/helm/operator-rbac.json");
  ASSERT_TRUE(in.good());
  const auto rbac = nlohmann::json::parse(in);
  auto granted = [&](const Permission& p) {
    const std::string res = p.resource + (p.subresource.empty() ? "" : "/" + p.subresource);
    for (const auto& r : rbac["rules"]) {
      if (r["group"] != p.group || r["resource"] != res) continue;
      for (const auto& v : r["verbs"]) {
        if (v == p.verb) return true;
      }
    }
    return false;
  };
  for (const std::string gang : {"", "volcano", "scheduler-plugins-scheduler"}) {
    mpijob::BuildOptions b;
    b.gang_scheduler = gang;
    for (const auto& p : needed_permissions({"team-a"}, b, true, "korovod")) {
      if (p.required) {
        EXPECT_TRUE(granted(p)) << p.describe();
      }
    }
  }
}

// An MPIJob "pi" with `workers` workers in namespace default, as a user would create it.
void create_pi_job(kube::MemoryClient& client, int workers) {
  kube::Object job = mpijob::testing::pi_job(workers);
  job["metadata"].erase("uid");
  client.create(mpijob::kMPIJobs, "default", job);
}

TEST(Manager, ReconcilesAgainstMemoryClient) {
  kube::MemoryClient client;
  kube::RealClock clock;
  create_pi_job(client, 3);
  ManagerOptions o;
  o.namespaces = {"default"};
  Manager m(client, o, clock);
  std::jthread t([&](std::stop_token st) { m.run(st); });
  bool ok = false;
  for (int i = 0; i < 200 && !ok; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    try {
      client.get(kube::resources::kPods, "default", "pi-worker-2");
      client.get(kube::resources::kJobs, "default", "pi-launcher");
      ok = true;
    } catch (const kube::ApiError&) {
    }
  }
  EXPECT_TRUE(ok);
  EXPECT_TRUE(m.synced());
  auto got = client.get(mpijob::kMPIJobs, "default", "pi");
  EXPECT_FALSE(got["status"]["conditions"].empty()) << got.dump();
  t.request_stop();
  t.join();
  EXPECT_FALSE(m.synced());
  EXPECT_GT(m.reconciles(), 0u);
}

ManagerOptions elected(const std::string& identity, OperatorMetrics& metrics) {
  ManagerOptions o;
  o.namespaces = {"default"};
  o.metrics = &metrics;
  o.leader_election.emplace();
  o.leader_election->lease_namespace = "korovod";
  o.leader_election->identity = identity;
  o.leader_election->on_lost = [] { ADD_FAILURE() << "the lease was lost"; };
  return o;
}

std::string lease_holder(kube::MemoryClient& client) {
  return client.get(kube::resources::kLeases, "korovod", "mpi-operator")["spec"]
      .value("holderIdentity", "");
}

bool pods_appear(kube::MemoryClient& client, std::chrono::milliseconds within) {
  for (auto waited = std::chrono::milliseconds(0); waited < within;
       waited += std::chrono::milliseconds(25)) {
    if (!client.list(kube::resources::kPods, "default", {}).items.empty()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return false;
}

TEST(Manager, ReconcilesOnceLeadingAndHandsTheLeaseBackOnStop) {
  kube::MemoryClient client;
  kube::RealClock clock;
  create_pi_job(client, 2);
  OperatorMetrics metrics;
  Manager m(client, elected("a", metrics), clock);
  std::jthread t([&](std::stop_token st) { m.run(st); });
  ASSERT_TRUE(pods_appear(client, std::chrono::seconds(5)));
  EXPECT_EQ(lease_holder(client), "a");
  EXPECT_NE(metrics.render().find("mpi_operator_is_leader 1\n"), std::string::npos);
  t.request_stop();
  t.join();
  EXPECT_EQ(lease_holder(client), "");
  EXPECT_NE(metrics.render().find("mpi_operator_is_leader 0\n"), std::string::npos);
}

// The Manager's Lease, campaigned for by another replica.
kube::LeaderElectionConfig lease_for(const std::string& identity) {
  kube::LeaderElectionConfig c;
  c.lease_namespace = "korovod";
  c.lease_name = "mpi-operator";
  c.identity = identity;
  return c;
}

TEST(Manager, StandbyReconcilesNothingAndStopsWithoutTheLease) {
  kube::MemoryClient client;
  kube::RealClock clock;
  kube::LeaderElector leader(client, lease_for("b"), clock);
  ASSERT_TRUE(leader.try_acquire_or_renew());
  create_pi_job(client, 2);
  OperatorMetrics metrics;
  Manager m(client, elected("a", metrics), clock);
  std::jthread t([&](std::stop_token st) { m.run(st); });
  EXPECT_FALSE(pods_appear(client, std::chrono::milliseconds(500)));
  EXPECT_FALSE(m.synced());
  EXPECT_TRUE(m.caches_synced()) << "a standby keeps its caches warm";
  t.request_stop();
  t.join();
  EXPECT_EQ(lease_holder(client), "b");
  EXPECT_EQ(m.reconciles(), 0u);
}

TEST(Manager, AWarmStandbyReconcilesWhatChangedWhileItWaitedOnceTheLeaseIsFree) {
  kube::MemoryClient client;
  kube::RealClock clock;
  kube::LeaderElector leader(client, lease_for("b"), clock);
  ASSERT_TRUE(leader.try_acquire_or_renew());
  OperatorMetrics metrics;
  Manager m(client, elected("a", metrics), clock);
  std::jthread t([&](std::stop_token st) { m.run(st); });
  for (int i = 0; i < 200 && !m.caches_synced(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(m.caches_synced());
  create_pi_job(client, 2);  // seen by the standby's informer, not reconciled yet
  EXPECT_FALSE(pods_appear(client, std::chrono::milliseconds(300)));
  EXPECT_EQ(m.reconciles(), 0u);
  leader.release();  // b steps down: a takes the lease at its next retry (3 s)
  ASSERT_TRUE(pods_appear(client, std::chrono::seconds(10)));
  EXPECT_EQ(lease_holder(client), "a");
  EXPECT_TRUE(m.synced());
  t.request_stop();
  t.join();
}

}  // namespace
}  // namespace controller
