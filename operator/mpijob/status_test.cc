// Status transitions: setCondition rules and updateMPIJobStatus with korovod's differences.
#include <gtest/gtest.h>

#include "kube/clock.h"
#include "mpijob/defaults.h"
#include "mpijob/status.h"
#include "mpijob/testing/fixtures.h"

namespace mpijob {
namespace {

using std::chrono::system_clock;
const system_clock::time_point kNow = kube::parse_time("2026-01-01T02:00:00Z");

TEST(SetCondition, NoOpWhenStatusAndReasonUnchanged) {
  JobStatus s;
  EXPECT_TRUE(set_condition(s, "Running", "True", "A", "m1", "t1"));
  EXPECT_FALSE(set_condition(s, "Running", "True", "A", "other message", "t2"));
  EXPECT_EQ(s.conditions[0].message, "m1");
}

TEST(SetCondition, KeepsTransitionTimeWhenOnlyReasonChanges) {
  JobStatus s;
  set_condition(s, "Running", "False", "A", "", "t1");
  EXPECT_TRUE(set_condition(s, "Running", "False", "B", "", "t2"));
  EXPECT_EQ(s.conditions[0].last_transition_time, "t1");
  EXPECT_EQ(s.conditions[0].last_update_time, "t2");
  set_condition(s, "Running", "True", "B", "", "t3");
  EXPECT_EQ(s.conditions[0].last_transition_time, "t3");
}

TEST(SetCondition, RunningAndRestartingReplaceEachOther) {
  JobStatus s;
  set_condition(s, "Created", "True", "C", "", "t");
  set_condition(s, "Running", "True", "R", "", "t");
  set_condition(s, "Restarting", "True", "X", "", "t");
  ASSERT_EQ(s.conditions.size(), 2u);
  EXPECT_EQ(s.conditions[1].type, "Restarting");
  set_condition(s, "Running", "True", "R", "", "t");
  ASSERT_EQ(s.conditions.size(), 2u);
  EXPECT_EQ(s.conditions[1].type, "Running");
}

TEST(SetCondition, TerminalConditionFlipsRunningToFalseAndGoesLast) {
  JobStatus s;
  set_condition(s, "Running", "True", "R", "", "t");
  set_condition(s, "Succeeded", "True", "S", "", "t");
  EXPECT_EQ(s.condition("Running")->status, "False");
  EXPECT_EQ(s.conditions.back().type, "Succeeded");
}

struct StatusCase {
  MPIJob job{testing::pi_job()};
  StatusUpdate u;
  StatusCase() { apply_defaults(job); }
  void run(const kube::Object* launcher, const std::vector<kube::Object>& lpods,
           const std::vector<kube::Object>& workers) {
    u.events.clear();
    u.counters.clear();
    u.restart_pods.clear();
    update_job_status(u, job, launcher, lpods, workers, kNow);
  }
};

TEST(JobStatus, RunningOnceLauncherAndAllWorkersRunningEventOnlyOnTransition) {
  StatusCase c;
  kube::Object launcher = testing::launcher_job("pi");
  std::vector<kube::Object> lpods = {testing::pod("pi-launcher-abc", "Running", "launcher-uid")};
  std::vector<kube::Object> workers = {testing::worker("pi", 0, "Running"),
                                       testing::worker("pi", 1, "Pending")};
  c.run(&launcher, lpods, workers);
  EXPECT_EQ(c.u.status.condition("Running"), nullptr);
  workers[1] = testing::worker("pi", 1, "Running");
  c.run(&launcher, lpods, workers);
  ASSERT_TRUE(c.u.status.has_true("Running"));
  EXPECT_EQ(c.u.status.condition("Running")->message, "MPIJob default/pi is running.");
  ASSERT_EQ(c.u.events.size(), 1u);
  EXPECT_EQ(c.u.events[0].reason, "MPIJobRunning");
  EXPECT_EQ(c.u.status.replica_statuses["Worker"].active, 2);
  EXPECT_EQ(c.u.status.replica_statuses["Launcher"].active, 1);
  c.run(&launcher, lpods, workers);
  EXPECT_TRUE(c.u.events.empty()) << "MPIJobRunning must not be re-emitted";
}

TEST(JobStatus, LauncherCompleteSucceedsOnceWithJobCompletionTime) {
  StatusCase c;
  kube::Object launcher = testing::launcher_job("pi", "Complete");
  c.run(&launcher, {}, {});
  EXPECT_TRUE(c.u.status.has_true("Succeeded"));
  EXPECT_EQ(c.u.status.completion_time, "2026-01-01T01:00:00Z");
  EXPECT_EQ(c.u.status.replica_statuses["Launcher"].succeeded, 1);
  EXPECT_EQ(c.u.counters, std::vector<Counter>{Counter::JobsSuccessful});
  // Running was never set: Running=False goes in, before Succeeded.
  ASSERT_NE(c.u.status.condition("Running"), nullptr);
  EXPECT_EQ(c.u.status.condition("Running")->status, "False");
  EXPECT_EQ(c.u.status.conditions.back().type, "Succeeded");
  c.run(&launcher, {}, {});
  EXPECT_TRUE(c.u.counters.empty());
}

TEST(JobStatus, LauncherBackoffLimitExceededNamesLastFailedPod) {
  StatusCase c;
  kube::Object launcher = testing::launcher_job("pi", "Failed", "BackoffLimitExceeded", 7);
  launcher["status"]["conditions"][0]["message"] = "Job has reached the specified backoff limit";
  kube::Object old_pod = testing::pod("pi-launcher-old", "Failed", "launcher-uid");
  kube::Object new_pod = testing::pod("pi-launcher-new", "Failed", "launcher-uid");
  new_pod["metadata"]["creationTimestamp"] = "2026-01-01T00:05:00Z";
  new_pod["status"]["containerStatuses"] = {
      {{"name", "mpi-launcher"}, {"state", {{"terminated", {{"exitCode", 3}, {"reason", "Error"}}}}}}};
  c.run(&launcher, {old_pod, new_pod}, {});
  const Condition* f = c.u.status.condition("Failed");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->reason, "BackoffLimitExceeded/Error");
  EXPECT_EQ(f->message, "Job has reached the specified backoff limit: pod pi-launcher-new "
                        "container mpi-launcher exited with code 3 (Error)");
  EXPECT_EQ(c.u.status.completion_time, "2026-01-01T02:00:00Z");
  EXPECT_EQ(c.u.status.replica_statuses["Launcher"].failed, 7);
  EXPECT_EQ(c.u.counters, std::vector<Counter>{Counter::JobsFailed});
}

TEST(JobStatus, DeadlineExceededReasonIsCopied) {
  StatusCase c;
  kube::Object launcher = testing::launcher_job("pi", "Failed", "DeadlineExceeded");
  c.run(&launcher, {}, {});
  EXPECT_EQ(c.u.status.condition("Failed")->reason, "DeadlineExceeded");
  EXPECT_EQ(c.u.status.condition("Failed")->message, "MPIJob default/pi has failed");
}

TEST(JobStatus, EvictionFailsTheJobWithCompletionTime) {
  StatusCase c;
  kube::Object evicted = testing::worker("pi", 1, "Failed");
  evicted["status"]["reason"] = "Evicted";
  c.run(nullptr, {}, {testing::worker("pi", 0, "Running"), evicted});
  const Condition* f = c.u.status.condition("Failed");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->reason, "MPIJobEvicted");
  EXPECT_EQ(f->message, "1/2 workers are evicted");
  EXPECT_TRUE(c.u.status.completion_time.has_value());
  EXPECT_TRUE(c.u.restart_pods.empty());
}

kube::Object failed_worker(int i, int exit_code, const std::string& uid) {
  kube::Object p = testing::worker("pi", i, "Failed", uid);
  p["status"]["containerStatuses"] = {
      {{"name", "mpi-worker"},
       {"state", {{"terminated", {{"exitCode", exit_code}, {"reason", "Error"}}}}}}};
  return p;
}

TEST(JobStatus, FailedWorkerIsRestartedOnceAndCountedOnce) {
  StatusCase c;
  c.run(nullptr, {}, {testing::worker("pi", 0, "Running"), failed_worker(1, 1, "u1")});
  EXPECT_EQ(c.u.restart_pods, std::vector<std::string>{"pi-worker-1"});
  EXPECT_EQ(c.u.status.restart_count, 1);
  const Condition* r = c.u.status.condition("Restarting");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->reason, "MPIJobRestarting");
  EXPECT_NE(r->message.find("pi-worker-1"), std::string::npos) << r->message;
  // The same failed pod seen again (deletion pending, or after an operator restart).
  c.run(nullptr, {}, {testing::worker("pi", 0, "Running"), failed_worker(1, 1, "u1")});
  EXPECT_EQ(c.u.status.restart_count, 1);
  EXPECT_EQ(c.u.restart_pods, std::vector<std::string>{"pi-worker-1"});
  EXPECT_TRUE(c.u.events.empty());
  // Once the pod is gone its UID is forgotten; the count stays.
  c.run(nullptr, {}, {testing::worker("pi", 0, "Running")});
  EXPECT_TRUE(c.u.status.restarted_pod_uids.empty());
  EXPECT_EQ(c.u.status.restart_count, 1);
}

TEST(JobStatus, PastTheBudgetFailsNamingPodContainerAndExitCode) {
  StatusCase c;
  c.job.json()["spec"]["runPolicy"]["backoffLimit"] = 2;
  kube::Object launcher = testing::launcher_job("pi", "", "", 1);  // one launcher failure
  c.run(&launcher, {}, {failed_worker(0, 1, "a")});  // 1 + 1 <= 2: restart
  EXPECT_EQ(c.u.status.restart_count, 1);
  EXPECT_FALSE(is_finished(c.u.status));
  c.run(&launcher, {}, {failed_worker(0, 137, "b")});  // 1 + 1 + 1 > 2: fail
  const Condition* f = c.u.status.condition("Failed");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->reason, "BackoffLimitExceeded/pi-worker-0/mpi-worker/ExitCode137");
  EXPECT_NE(f->message.find("exited with code 137"), std::string::npos) << f->message;
  EXPECT_TRUE(c.u.status.completion_time.has_value());
  EXPECT_EQ(c.u.status.condition("Restarting")->status, "False");
  EXPECT_EQ(c.u.counters, std::vector<Counter>{Counter::JobsFailed});
}

TEST(JobStatus, SuspendAndResume) {
  StatusCase c;
  c.job.json()["spec"]["runPolicy"]["suspend"] = true;
  c.run(nullptr, {}, {});
  EXPECT_TRUE(c.u.status.has_true("Suspended"));
  EXPECT_EQ(c.u.status.condition("Running")->reason, "MPIJobSuspended");
  EXPECT_EQ(c.u.events.at(0).reason, "MPIJobSuspended");
  c.job.json()["spec"]["runPolicy"]["suspend"] = false;
  c.run(nullptr, {}, {});
  EXPECT_EQ(c.u.status.condition("Suspended")->status, "False");
  EXPECT_EQ(c.u.status.condition("Suspended")->reason, "MPIJobResumed");
  EXPECT_EQ(c.u.status.start_time, "2026-01-01T02:00:00Z");
  EXPECT_EQ(c.u.events.at(0).reason, "MPIJobResumed");
}

}  // namespace
}  // namespace mpijob
