// MPIJob lifecycles driven through the real API server against the korovod-operator binary.
// The tests play kubelet: they write pod phases; the real Job controller runs the launcher Job.
#include <algorithm>
#include <set>
#include <thread>

#include "fixture.h"

namespace optest {
namespace {

using namespace std::chrono_literals;

std::string cm_data(kube::Client& c, const std::string& ns, const std::string& job,
                    const std::string& key) {
  auto cm = try_get(c, kube::resources::kConfigMaps, ns, job + "-config");
  if (!cm || !(*cm)["data"].contains(key)) return "";
  return (*cm)["data"][key];
}

bool has_event(kube::Client& c, const std::string& ns, const std::string& name,
               const std::string& reason) {
  for (const auto& e : events_for(c, ns, name)) {
    if (e.value("reason", "") == reason) return true;
  }
  return false;
}

size_t count_workers(kube::Client& c, const std::string& ns, const std::string& job) {
  return worker_pods(c, ns, job).size();
}

class Lifecycle : public OperatorTest {
 protected:
  void SetUp() override {
    OperatorTest::SetUp();
    if (!IsSkipped()) start_operator();
  }
};

TEST_F(Lifecycle, SuccessPathToSucceededWithCleanup) {
  create({.name = "pi", .workers = 2});
  ASSERT_TRUE(wait_for([&] { return has_condition(c(), ns(), "pi", "Created"); }));
  ASSERT_TRUE(wait_for([&] { return count_workers(c(), ns(), "pi") == 2; }));
  for (auto [r, n] : {std::pair{kube::resources::kServices, "pi"},
                      std::pair{kube::resources::kConfigMaps, "pi-config"},
                      std::pair{kube::resources::kSecrets, "pi-ssh"},
                      std::pair{kube::resources::kJobs, "pi-launcher"}}) {
    ASSERT_TRUE(wait_for([&] { return try_get(c(), r, ns(), n).has_value(); })) << n;
  }
  set_all_workers(c(), ns(), "pi", "Running");
  ASSERT_TRUE(wait_for([&] {
    return cm_data(c(), ns(), "pi", "discover_hosts.sh") ==
           "#!/bin/sh\necho pi-worker-0.pi." + ns() + ".svc:1\necho pi-worker-1.pi." + ns() + ".svc:1\n";
  })) << cm_data(c(), ns(), "pi", "discover_hosts.sh");
  set_launcher_phase(c(), ns(), "pi", "Running");
  ASSERT_TRUE(wait_for([&] { return has_condition(c(), ns(), "pi", "Running"); }));
  set_launcher_phase(c(), ns(), "pi", "Succeeded");
  ASSERT_TRUE(wait_for([&] { return has_condition(c(), ns(), "pi", "Succeeded"); }, 60s));
  auto job = get_job("pi");
  EXPECT_TRUE(job["status"].contains("completionTime"));
  EXPECT_EQ(condition(job, "Running")->value("status", ""), "False");
  // cleanPodPolicy defaults to Running (korovod): the running workers go.
  EXPECT_TRUE(wait_for([&] { return count_workers(c(), ns(), "pi") == 0; }));
  EXPECT_TRUE(wait_for([&] { return has_event(c(), ns(), "pi", "MPIJobSucceeded"); }));
  EXPECT_TRUE(has_event(c(), ns(), "pi", "MPIJobCreated"));
}

TEST_F(Lifecycle, WaitForWorkersReady) {
  create({.name = "wait", .workers = 2, .launcher_creation_policy = "WaitForWorkersReady"});
  ASSERT_TRUE(wait_for([&] { return count_workers(c(), ns(), "wait") == 2; }));
  std::this_thread::sleep_for(2s);
  EXPECT_FALSE(try_get(c(), kube::resources::kJobs, ns(), "wait-launcher"));
  set_pod_phase(c(), ns(), "wait-worker-0", "Running");
  std::this_thread::sleep_for(1s);
  EXPECT_FALSE(try_get(c(), kube::resources::kJobs, ns(), "wait-launcher"));
  set_pod_phase(c(), ns(), "wait-worker-1", "Running");
  EXPECT_TRUE(wait_for([&] {
    return try_get(c(), kube::resources::kJobs, ns(), "wait-launcher").has_value();
  }));
}

TEST_F(Lifecycle, CreateSuspendedResumeAndSuspendAgain) {
  create({.name = "sus", .workers = 2, .suspend = true});
  ASSERT_TRUE(wait_for([&] { return has_condition(c(), ns(), "sus", "Suspended"); }));
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(count_workers(c(), ns(), "sus"), 0u);
  auto launcher = try_get(c(), kube::resources::kJobs, ns(), "sus-launcher");
  if (launcher) {
    EXPECT_TRUE((*launcher)["spec"].value("suspend", false));
  }
  EXPECT_TRUE(launcher_pods(c(), ns(), "sus").empty());

  patch_job("sus", R"({"spec":{"runPolicy":{"suspend":false}}})");
  ASSERT_TRUE(wait_for([&] { return count_workers(c(), ns(), "sus") == 2; }));
  ASSERT_TRUE(wait_for([&] {
    auto j = get_job("sus");
    auto s = condition(j, "Suspended");
    return s && s->value("status", "") == "False" && s->value("reason", "") == "MPIJobResumed";
  }));
  ASSERT_TRUE(wait_for([&] {
    auto l = try_get(c(), kube::resources::kJobs, ns(), "sus-launcher");
    return l && !(*l)["spec"].value("suspend", true);
  }));
  EXPECT_TRUE(has_event(c(), ns(), "sus", "MPIJobResumed"));

  patch_job("sus", R"({"spec":{"runPolicy":{"suspend":true}}})");
  EXPECT_TRUE(wait_for([&] { return has_condition(c(), ns(), "sus", "Suspended"); }));
  EXPECT_TRUE(wait_for([&] { return count_workers(c(), ns(), "sus") == 0; }));
  EXPECT_TRUE(wait_for([&] {
    auto l = try_get(c(), kube::resources::kJobs, ns(), "sus-launcher");
    return l && (*l)["spec"].value("suspend", false);
  }));
}

TEST_F(Lifecycle, LauncherFailureWithBackoffLimitNamesThePod) {
  create({.name = "lf", .workers = 1, .backoff_limit = 0});
  ASSERT_TRUE(wait_for([&] { return count_workers(c(), ns(), "lf") == 1; }));
  const std::string pod = set_launcher_phase(c(), ns(), "lf", "Failed", 3);
  ASSERT_TRUE(wait_for([&] { return has_condition(c(), ns(), "lf", "Failed"); }, 60s));
  auto failed = *condition(get_job("lf"), "Failed");
  EXPECT_TRUE(failed.value("reason", "").starts_with("BackoffLimitExceeded")) << failed.dump();
  EXPECT_NE((failed.value("reason", "") + failed.value("message", "")).find(pod),
            std::string::npos) << failed.dump();
  EXPECT_TRUE(get_job("lf")["status"].contains("completionTime"));
}

TEST_F(Lifecycle, WorkerFailureRestartsThenFailsPastTheBudget) {
  create({.name = "wf", .workers = 2, .backoff_limit = 1});
  ASSERT_TRUE(wait_for([&] { return count_workers(c(), ns(), "wf") == 2; }));
  const std::string uid0 = kube::uid_of(c().get(kube::resources::kPods, ns(), "wf-worker-0"));
  set_pod_phase(c(), ns(), "wf-worker-0", "Failed", "", "", 137);
  ASSERT_TRUE(wait_for([&] { return has_condition(c(), ns(), "wf", "Restarting"); }));
  ASSERT_TRUE(wait_for([&] {
    auto p = try_get(c(), kube::resources::kPods, ns(), "wf-worker-0");
    return p && kube::uid_of(*p) != uid0 && (*p)["status"].value("phase", "") != "Failed";
  })) << "worker-0 was not recreated";
  EXPECT_FALSE(has_condition(c(), ns(), "wf", "Failed"));
  set_pod_phase(c(), ns(), "wf-worker-1", "Failed", "", "", 1);
  ASSERT_TRUE(wait_for([&] { return has_condition(c(), ns(), "wf", "Failed"); }));
  auto failed = *condition(get_job("wf"), "Failed");
  EXPECT_NE((failed.value("reason", "") + failed.value("message", "")).find("wf-worker-1"),
            std::string::npos) << failed.dump();
}

TEST_F(Lifecycle, EvictionFailsTheJobAndCleansUp) {
  create({.name = "ev", .workers = 2});
  ASSERT_TRUE(wait_for([&] { return count_workers(c(), ns(), "ev") == 2; }));
  set_pod_phase(c(), ns(), "ev-worker-1", "Running");
  set_pod_phase(c(), ns(), "ev-worker-0", "Failed", "Evicted", "The node was low on memory.");
  ASSERT_TRUE(wait_for([&] { return has_condition(c(), ns(), "ev", "Failed"); }));
  auto job = get_job("ev");
  EXPECT_EQ(condition(job, "Failed")->value("reason", ""), "MPIJobEvicted");
  EXPECT_TRUE(job["status"].contains("completionTime"));
  // cleanPodPolicy Running: the running worker is deleted.
  EXPECT_TRUE(wait_for([&] {
    return !try_get(c(), kube::resources::kPods, ns(), "ev-worker-1").has_value();
  }));
}

TEST_F(Lifecycle, EachCleanPodPolicy) {
  for (const char* policy : {"None", "Running", "All"}) {
    std::string name = "clean-" + std::string(policy);
    std::transform(name.begin(), name.end(), name.begin(), ::tolower);
    create({.name = name, .workers = 2, .clean_pod_policy = policy});
  }
  for (const char* name : {"clean-none", "clean-running", "clean-all"}) {
    ASSERT_TRUE(wait_for([&] { return count_workers(c(), ns(), name) == 2; })) << name;
    set_pod_phase(c(), ns(), std::string(name) + "-worker-0", "Running");
    set_pod_phase(c(), ns(), std::string(name) + "-worker-1", "Succeeded");
    set_launcher_phase(c(), ns(), name, "Succeeded");
  }
  for (const char* name : {"clean-none", "clean-running", "clean-all"}) {
    ASSERT_TRUE(wait_for([&] { return has_condition(c(), ns(), name, "Succeeded"); }, 60s)) << name;
  }
  auto names = [&](const std::string& job) {
    std::set<std::string> out;
    for (const auto& p : worker_pods(c(), ns(), job)) out.insert(kube::name_of(p));
    return out;
  };
  EXPECT_TRUE(wait_for([&] { return names("clean-all").empty(); }));
  EXPECT_TRUE(wait_for([&] {
    return names("clean-running") == std::set<std::string>{"clean-running-worker-1"};
  }));
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(names("clean-none"),
            (std::set<std::string>{"clean-none-worker-0", "clean-none-worker-1"}));
}

TEST_F(Lifecycle, TtlDeletesTheMPIJob) {
  create({.name = "ttl", .workers = 1, .ttl = 1});
  ASSERT_TRUE(wait_for([&] { return count_workers(c(), ns(), "ttl") == 1; }));
  set_launcher_phase(c(), ns(), "ttl", "Succeeded");
  // With a 1 s TTL the job may be gone before a poll sees its Succeeded condition (a loaded CI
  // machine): the Event the operator records on success outlives the job and says the same.
  ASSERT_TRUE(wait_for([&] { return has_event(c(), ns(), "ttl", "MPIJobSucceeded"); }, 60s));
  EXPECT_TRUE(wait_for([&] { return !try_get(c(), kMPIJobs, ns(), "ttl").has_value(); }, 20s));
  // One launcher pod, ever: the finished job was not started again. (When the launcher Job
  // carried the TTL too, Kubernetes could delete it before the operator saw it finish, and the
  // operator made a new one: seen under ASan.)
  int launcher_pods_created = 0;
  for (const auto& e : events_for(c(), ns(), "ttl-launcher")) {
    if (e.value("reason", "") == "SuccessfulCreate") launcher_pods_created += e.value("count", 1);
  }
  EXPECT_EQ(launcher_pods_created, 1);
}

TEST_F(Lifecycle, ManagedByAnotherControllerIsUntouched) {
  create({.name = "mk", .workers = 1, .managed_by = "kueue.x-k8s.io/multikueue"});
  create({.name = "ours", .workers = 1});
  ASSERT_TRUE(wait_for([&] { return has_condition(c(), ns(), "ours", "Created"); }));
  std::this_thread::sleep_for(1s);
  auto job = get_job("mk");
  EXPECT_FALSE(job.contains("status") && job["status"].contains("conditions")) << job.dump();
  EXPECT_EQ(count_workers(c(), ns(), "mk"), 0u);
  EXPECT_FALSE(try_get(c(), kube::resources::kConfigMaps, ns(), "mk-config"));
  EXPECT_FALSE(try_get(c(), kube::resources::kServices, ns(), "mk"));
}

TEST_F(Lifecycle, SameNameObjectNotOursGetsAnEventAndIsUntouched) {
  kube::Object cm = {{"apiVersion", "v1"}, {"kind", "ConfigMap"},
                     {"metadata", {{"name", "taken-config"}}}, {"data", {{"hostfile", "mine"}}}};
  const std::string rv = kube::resource_version_of(
      c().create(kube::resources::kConfigMaps, ns(), cm));
  create({.name = "taken", .workers = 1});
  EXPECT_TRUE(wait_for([&] { return has_event(c(), ns(), "taken", "ErrResourceExists"); }));
  auto now = c().get(kube::resources::kConfigMaps, ns(), "taken-config");
  EXPECT_EQ(kube::resource_version_of(now), rv);
  EXPECT_EQ(now["data"]["hostfile"], "mine");
}

TEST_F(Lifecycle, ScaleUpAndDownUpdatesDiscoverHosts) {
  create({.name = "el", .workers = 2});
  ASSERT_TRUE(wait_for([&] { return count_workers(c(), ns(), "el") == 2; }));
  set_all_workers(c(), ns(), "el", "Running");
  auto hosts = [&](std::initializer_list<int> idx) {
    std::string s = "#!/bin/sh\n";
    for (int i : idx) s += "echo el-worker-" + std::to_string(i) + ".el." + ns() + ".svc:1\n";
    return s;
  };
  ASSERT_TRUE(wait_for([&] { return cm_data(c(), ns(), "el", "discover_hosts.sh") == hosts({0, 1}); }));
  patch_job("el", R"({"spec":{"mpiReplicaSpecs":{"Worker":{"replicas":3}}}})");
  ASSERT_TRUE(wait_for([&] { return count_workers(c(), ns(), "el") == 3; }));
  set_pod_phase(c(), ns(), "el-worker-2", "Running");
  EXPECT_TRUE(wait_for([&] { return cm_data(c(), ns(), "el", "discover_hosts.sh") == hosts({0, 1, 2}); }))
      << cm_data(c(), ns(), "el", "discover_hosts.sh");
  patch_job("el", R"({"spec":{"mpiReplicaSpecs":{"Worker":{"replicas":1}}}})");
  EXPECT_TRUE(wait_for([&] { return count_workers(c(), ns(), "el") == 1; }));
  EXPECT_TRUE(wait_for([&] { return cm_data(c(), ns(), "el", "discover_hosts.sh") == hosts({0}); }))
      << cm_data(c(), ns(), "el", "discover_hosts.sh");
  EXPECT_NE(cm_data(c(), ns(), "el", "hostfile").find("el-worker-0"), std::string::npos);
  EXPECT_EQ(cm_data(c(), ns(), "el", "hostfile").find("el-worker-1"), std::string::npos);
}

TEST_F(Lifecycle, WhatAdmissionCannotJudgeFailsWithValidationError) {
  // Admitted (names may have 253 characters), but "<name>-worker-0" is no DNS-1035 label.
  const std::string name(60, 'v');
  create({.name = name, .workers = 1});
  ASSERT_TRUE(wait_for([&] { return has_condition(c(), ns(), name, "Failed"); }));
  auto failed = *condition(get_job(name), "Failed");
  EXPECT_EQ(failed.value("reason", ""), "ValidationError") << failed.dump();
  EXPECT_NE(failed.value("message", "").find("metadata.name"), std::string::npos) << failed.dump();
  EXPECT_TRUE(wait_for([&] { return has_event(c(), ns(), name, "ValidationError"); }));
  EXPECT_EQ(count_workers(c(), ns(), name), 0u);
}

// The ServiceAccount admission refuses pods naming an account that does not exist yet with a
// 403 ("error looking up service account"); so does every pod of a namespace made a moment
// ago, before the service-account controller made its "default". It passes by itself: the
// operator must retry it (not wait for an edit of the MPIJob, which would never come) and must
// not call it a permanent failure.
TEST_F(Lifecycle, WorkersWaitForAServiceAccountThatComesLater) {
  kube::Object job = mpijob({.name = "late", .workers = 2});
  job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["serviceAccountName"] = "late-sa";
  c().create(kMPIJobs, ns(), job);
  ASSERT_TRUE(wait_for([&] {
    return op_->log().find("error looking up service account " + ns() + "/late-sa") !=
           std::string::npos;
  })) << op_->log();
  EXPECT_EQ(count_workers(c(), ns(), "late"), 0u);
  kube::Object sa = {{"apiVersion", "v1"}, {"kind", "ServiceAccount"},
                     {"metadata", {{"name", "late-sa"}}}};
  c().create(kube::resources::kServiceAccounts, ns(), sa);
  EXPECT_TRUE(wait_for([&] { return count_workers(c(), ns(), "late") == 2; }, 60s))
      << "the workers must come once the account exists, with the MPIJob untouched";
  EXPECT_FALSE(has_event(c(), ns(), "late", "ReconcileFailed"));
  EXPECT_EQ(op_->log().find("reconcile failed permanently"), std::string::npos) << op_->log();
}

}  // namespace
}  // namespace optest
