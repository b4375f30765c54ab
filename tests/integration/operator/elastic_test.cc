// Elastic MPIJobs on the real control plane: the /scale subresource through `kubectl scale`,
// discover_hosts.sh following the workers' readiness, WorkersChanged events, readyWorkers, and a
// deleted worker replaced — all without the launcher Job being touched. The tests play kubelet
// (they write pod status); the real Job controller makes the launcher pod.
#include <algorithm>

#include "fixture.h"

namespace optest {
namespace {

using namespace std::chrono_literals;

std::string discover_hosts(kube::Client& c, const std::string& ns, const std::string& job) {
  auto cm = try_get(c, kube::resources::kConfigMaps, ns, job + "-config");
  if (!cm || !(*cm)["data"].contains("discover_hosts.sh")) return "";
  return (*cm)["data"]["discover_hosts.sh"];
}

bool has_event_message(kube::Client& c, const std::string& ns, const std::string& job,
                       const std::string& reason, const std::string& message) {
  for (const auto& e : events_for(c, ns, job)) {
    if (e.value("reason", "") == reason && e.value("message", "") == message) return true;
  }
  return false;
}

std::string all_events(kube::Client& c, const std::string& ns, const std::string& job) {
  std::string out;
  for (const auto& e : events_for(c, ns, job)) {
    out += e.value("reason", "") + ": " + e.value("message", "") + "\n";
  }
  return out;
}

class Elastic : public OperatorTest {
 protected:
  void SetUp() override {
    OperatorTest::SetUp();
    if (!IsSkipped()) start_operator();
  }

  // An MPIJob whose launcher runs korovodrun in elastic mode (what makes the operator record
  // membership events), with its launcher pod Running and its workers Running and Ready.
  kube::Object create_running(const std::string& name, int workers) {
    kube::Object job = mpijob({.name = name, .workers = workers});
    auto& launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0];
    launcher["command"] = {"korovodrun"};
    launcher["args"] = {"--min-np", "1", "--max-np", "4", "--host-discovery-script",
                        "/etc/mpi/discover_hosts.sh", "python3", "train.py"};
    const kube::Object created = c().create(kMPIJobs, ns(), job);
    EXPECT_TRUE(wait_for([&] { return worker_pods(c(), ns(), name).size() == size_t(workers); }));
    set_all_workers(c(), ns(), name, "Running");
    set_launcher_phase(c(), ns(), name, "Running");
    return created;
  }

  std::string hosts(const std::string& job, std::initializer_list<int> workers) {
    std::string s = "#!/bin/sh\n";
    for (int i : workers) s += "echo " + job + "-worker-" + std::to_string(i) + "." + job + "." + ns() + ".svc:1\n";
    return s;
  }

  std::string launcher_uid(const std::string& job) {
    auto j = try_get(c(), kube::resources::kJobs, ns(), job + "-launcher");
    return j ? kube::uid_of(*j) : "";
  }

  std::string launcher_pod_uids(const std::string& job) {
    std::string out;
    for (const auto& p : launcher_pods(c(), ns(), job)) out += kube::uid_of(p) + " ";
    return out;
  }

  int status_int(const std::string& job, const std::string& pointer) {
    const kube::Object j = get_job(job);
    const kube::Object::json_pointer ptr(pointer);
    return j.contains(ptr) ? j[ptr].get<int>() : 0;
  }

  void expect_no_failure(const std::string& job) {
    EXPECT_FALSE(has_condition(c(), ns(), job, "Failed")) << get_job(job)["status"].dump(2);
  }
};

TEST_F(Elastic, KubectlScaleAddsAndRemovesWorkersWithoutTouchingTheLauncher) {
  create_running("el", 2);
  ASSERT_TRUE(wait_for([&] { return discover_hosts(c(), ns(), "el") == hosts("el", {0, 1}); }))
      << discover_hosts(c(), ns(), "el");
  ASSERT_TRUE(wait_for([&] { return status_int("el", "/status/readyWorkers") == 2; }));
  const std::string launcher = launcher_uid("el"), launcher_pods_before = launcher_pod_uids("el");
  ASSERT_FALSE(launcher.empty());

  // The scale subresource: what `kubectl get --subresource=scale` and an HPA read.
  auto scale = kubectl({"-n", ns(), "get", "mpijob/el", "--subresource=scale", "-o", "json"});
  ASSERT_EQ(scale.exit_code, 0) << scale.output;
  const kube::Object s = kube::Object::parse(scale.output);
  EXPECT_EQ(s["kind"], "Scale");
  EXPECT_EQ(s["spec"]["replicas"], 2);
  EXPECT_EQ(s["status"]["replicas"], 2);
  EXPECT_EQ(s["status"]["selector"], "training.kubeflow.org/job-name=el,training.kubeflow.org/job-role=worker");

  auto up = kubectl({"-n", ns(), "scale", "mpijob/el", "--replicas=3"});
  ASSERT_EQ(up.exit_code, 0) << up.output;
  EXPECT_EQ(get_job("el")["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"], 3);
  ASSERT_TRUE(wait_for([&] { return worker_pods(c(), ns(), "el").size() == 3; }));
  // Pending, not Ready: not listed yet.
  EXPECT_EQ(discover_hosts(c(), ns(), "el"), hosts("el", {0, 1}));
  set_pod_phase(c(), ns(), "el-worker-2", "Running");
  EXPECT_TRUE(wait_for([&] { return discover_hosts(c(), ns(), "el") == hosts("el", {0, 1, 2}); }))
      << discover_hosts(c(), ns(), "el");
  EXPECT_TRUE(wait_for([&] { return status_int("el", "/status/readyWorkers") == 3; }));
  EXPECT_TRUE(wait_for([&] {
    return has_event_message(c(), ns(), "el", "WorkersChanged", "2 -> 3 workers (added el-worker-2)");
  })) << all_events(c(), ns(), "el");

  auto down = kubectl({"-n", ns(), "scale", "mpijob/el", "--replicas=1"});
  ASSERT_EQ(down.exit_code, 0) << down.output;
  EXPECT_TRUE(wait_for([&] { return discover_hosts(c(), ns(), "el") == hosts("el", {0}); }))
      << discover_hosts(c(), ns(), "el");
  EXPECT_TRUE(wait_for([&] {
    auto pods = worker_pods(c(), ns(), "el");
    return std::none_of(pods.begin(), pods.end(), [](const kube::Object& p) {
      return kube::name_of(p) != "el-worker-0" && !kube::has_deletion_timestamp(p);
    });
  }));
  EXPECT_TRUE(wait_for([&] {
    return has_event_message(c(), ns(), "el", "WorkersChanged",
                             "3 -> 1 workers (removed el-worker-1, el-worker-2)");
  })) << all_events(c(), ns(), "el");
  EXPECT_TRUE(wait_for([&] { return status_int("el", "/status/readyWorkers") == 1; }));

  // The schema's minimum holds through /scale: no job can be scaled to zero workers.
  auto zero = kubectl({"-n", ns(), "scale", "mpijob/el", "--replicas=0"});
  EXPECT_NE(zero.exit_code, 0) << zero.output;
  EXPECT_NE(zero.output.find("replicas"), std::string::npos) << zero.output;

  EXPECT_EQ(launcher_uid("el"), launcher) << "the launcher Job was recreated";
  EXPECT_EQ(launcher_pod_uids("el"), launcher_pods_before) << "the launcher pod was replaced";
  expect_no_failure("el");
}

TEST_F(Elastic, DiscoverHostsFollowsReadiness) {
  create_running("rd", 2);
  ASSERT_TRUE(wait_for([&] { return discover_hosts(c(), ns(), "rd") == hosts("rd", {0, 1}); }));
  // Running but not Ready (a failing readiness probe): out of the list until Ready again.
  for (int attempt = 0;; ++attempt) {
    kube::Object p = c().get(kube::resources::kPods, ns(), "rd-worker-0");
    for (auto& cond : p["status"]["conditions"]) {
      if (cond["type"] == "Ready") cond["status"] = "False";
    }
    try {
      c().update_status(kube::resources::kPods, ns(), p);
      break;
    } catch (const kube::ApiError& e) {
      if (!kube::is_conflict(e) || attempt > 20) throw;
    }
  }
  EXPECT_TRUE(wait_for([&] { return discover_hosts(c(), ns(), "rd") == hosts("rd", {1}); }))
      << discover_hosts(c(), ns(), "rd");
  EXPECT_TRUE(wait_for([&] { return status_int("rd", "/status/readyWorkers") == 1; }));
  set_pod_phase(c(), ns(), "rd-worker-0", "Running");
  EXPECT_TRUE(wait_for([&] { return discover_hosts(c(), ns(), "rd") == hosts("rd", {0, 1}); }))
      << discover_hosts(c(), ns(), "rd");
  EXPECT_TRUE(wait_for([&] {
    return has_event_message(c(), ns(), "rd", "WorkersChanged", "2 -> 1 workers (removed rd-worker-0)") &&
           has_event_message(c(), ns(), "rd", "WorkersChanged", "1 -> 2 workers (added rd-worker-0)");
  })) << all_events(c(), ns(), "rd");
  expect_no_failure("rd");
}

TEST_F(Elastic, DeletedOrFailedWorkerIsReplacedAndRejoins) {
  create_running("rp", 2);
  ASSERT_TRUE(wait_for([&] { return discover_hosts(c(), ns(), "rp") == hosts("rp", {0, 1}); }));
  const std::string launcher = launcher_uid("rp");
  const std::string old_uid = kube::uid_of(c().get(kube::resources::kPods, ns(), "rp-worker-1"));
  // No kubelet runs here: the unbound pod goes at once, as a deleted pod does once its kubelet
  // stopped it.
  c().remove(kube::resources::kPods, ns(), "rp-worker-1", {});
  auto replaced = [&](const std::string& pod, const std::string& uid) {
    auto p = try_get(c(), kube::resources::kPods, ns(), pod);
    return p && kube::uid_of(*p) != uid && !kube::has_deletion_timestamp(*p);
  };
  ASSERT_TRUE(wait_for([&] { return replaced("rp-worker-1", old_uid); })) << "no replacement pod";
  EXPECT_EQ(discover_hosts(c(), ns(), "rp"), hosts("rp", {0})) << "a Pending replacement is not listed";
  set_pod_phase(c(), ns(), "rp-worker-1", "Running");
  EXPECT_TRUE(wait_for([&] { return discover_hosts(c(), ns(), "rp") == hosts("rp", {0, 1}); }))
      << discover_hosts(c(), ns(), "rp");

  // A worker whose container fails is replaced too (counted against backoffLimit).
  const std::string failed_uid = kube::uid_of(c().get(kube::resources::kPods, ns(), "rp-worker-0"));
  set_pod_phase(c(), ns(), "rp-worker-0", "Failed", "", "", 137);
  ASSERT_TRUE(wait_for([&] { return replaced("rp-worker-0", failed_uid); })) << "failed worker not replaced";
  EXPECT_TRUE(wait_for([&] { return discover_hosts(c(), ns(), "rp") == hosts("rp", {1}); }));
  set_pod_phase(c(), ns(), "rp-worker-0", "Running");
  EXPECT_TRUE(wait_for([&] { return discover_hosts(c(), ns(), "rp") == hosts("rp", {0, 1}); }));
  EXPECT_TRUE(wait_for([&] {
    return has_event_message(c(), ns(), "rp", "WorkersChanged", "1 -> 2 workers (added rp-worker-0)");
  })) << all_events(c(), ns(), "rp");
  EXPECT_EQ(status_int("rp", "/status/restartCount"), 1);
  EXPECT_EQ(launcher_uid("rp"), launcher) << "the launcher Job was recreated";
  expect_no_failure("rp");
}

}  // namespace
}  // namespace optest
