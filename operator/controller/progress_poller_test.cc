// ProgressPoller: launcher log tails -> MPIJob.status.progress and the progress gauges, on the
// in-memory API server with logs handed in by the test.
#include "controller/progress_poller.h"

#include <gtest/gtest.h>

#include <map>

#include "kube/fake_clock.h"
#include "kube/memory_client.h"
#include "kube/object_meta.h"
#include "mpijob/types.h"

namespace controller {
namespace {

class ScriptedLogs final : public LauncherLogs {
 public:
  std::optional<std::string> tail(const std::string& ns, const std::string& pod, const std::string& container,
                                  int lines) override {
    ++reads;
    last_container = container;
    last_lines = lines;
    auto it = logs.find(ns + "/" + pod);
    if (it == logs.end()) return std::nullopt;
    return it->second;
  }
  std::map<std::string, std::string> logs;  // ns/pod -> text
  int reads = 0;
  std::string last_container;
  int last_lines = 0;
};

class ProgressPollerTest : public ::testing::Test {
 protected:
  ProgressPollerTest()
      : client_(clock_), cache_(client_), log_(sink_, LogFormat::Text, LogLevel::Warning, clock_),
        poller_(client_, cache_, logs_, metrics_, log_, clock_, {"ns"}, ProgressOptions{std::chrono::seconds(10), 50}) {
    client_.create(mpijob::kMPIJobs, "ns",
                   {{"apiVersion", "kubeflow.org/v2beta1"}, {"kind", "MPIJob"},
                    {"metadata", {{"name", "pi"}, {"namespace", "ns"}}},
                    {"spec", {{"mpiReplicaSpecs", kube::Object::object()}}}});
    set_condition("Running");
    const std::string mpijob_uid = kube::uid_of(client_.get(mpijob::kMPIJobs, "ns", "pi"));
    const kube::Object job = client_.create(
        kube::resources::kJobs, "ns",
        {{"apiVersion", "batch/v1"}, {"kind", "Job"},
         {"metadata", {{"name", "pi-launcher"}, {"namespace", "ns"},
                       {"ownerReferences", {{{"apiVersion", "kubeflow.org/v2beta1"}, {"kind", "MPIJob"}, {"name", "pi"},
                                             {"uid", mpijob_uid}, {"controller", true}}}}}}});
    job_uid_ = kube::uid_of(job);
  }

  void set_condition(const std::string& type) {
    kube::Object job = client_.get(mpijob::kMPIJobs, "ns", "pi");
    job["status"]["conditions"] = {{{"type", type}, {"status", "True"}}};
    client_.update_status(mpijob::kMPIJobs, "ns", job);
  }

  void add_launcher_pod(const std::string& name, const std::string& phase) {
    clock_.advance(std::chrono::seconds(2));  // creationTimestamps have second precision
    client_.create(kube::resources::kPods, "ns",
                   {{"apiVersion", "v1"}, {"kind", "Pod"},
                    {"metadata", {{"name", name}, {"namespace", "ns"},
                                  {"ownerReferences", {{{"apiVersion", "batch/v1"}, {"kind", "Job"}, {"name", "pi-launcher"},
                                                        {"uid", job_uid_}, {"controller", true}}}}}},
                    {"spec", {{"containers", {{{"name", "mpi-launcher"}, {"image", "i"}}}}}},
                    {"status", {{"phase", phase}}}});
  }

  kube::Object progress() { return client_.get(mpijob::kMPIJobs, "ns", "pi").value("/status/progress"_json_pointer, kube::Object()); }
  std::string version() { return client_.get(mpijob::kMPIJobs, "ns", "pi")["metadata"]["resourceVersion"]; }

  kube::FakeClock clock_;
  kube::MemoryClient client_;
  mpijob::ClientCache cache_;
  std::ostringstream sink_;
  Logger log_;
  ScriptedLogs logs_;
  OperatorMetrics metrics_;
  ProgressPoller poller_;
  std::string job_uid_;
};

TEST_F(ProgressPollerTest, WritesTheLastLineOfTheRunningLauncherAndServesItsGauges) {
  add_launcher_pod("pi-launcher-a", "Running");
  logs_.logs["ns/pi-launcher-a"] =
      "korovod-progress {\"step\":5,\"total_steps\":100}\nepoch 1\nkorovod-progress "
      "{\"step\":20,\"total_steps\":100,\"samples_per_second\":640.5,\"loss\":0.5,\"eta_seconds\":75}\n";
  poller_.poll_once();
  EXPECT_EQ(logs_.last_container, "mpi-launcher");  // the first container: the one running mpirun
  EXPECT_EQ(logs_.last_lines, 50);
  const kube::Object p = progress();
  EXPECT_EQ(p["step"], 20);
  EXPECT_EQ(p["totalSteps"], 100);
  EXPECT_EQ(p["eta"], "1m15s");
  EXPECT_EQ(p["launcherPod"], "pi-launcher-a");
  const std::string metrics = metrics_.render();
  EXPECT_NE(metrics.find("korovod_mpijob_progress_step{namespace=\"ns\",mpijob=\"pi\"} 20\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("korovod_mpijob_progress_samples_per_second{namespace=\"ns\",mpijob=\"pi\"} 640.5\n"),
            std::string::npos);
  EXPECT_NE(metrics.find("korovod_mpijob_progress_eta_seconds{namespace=\"ns\",mpijob=\"pi\"} 75\n"), std::string::npos);

  const std::string before = version();
  poller_.poll_once();  // nothing new: no write
  EXPECT_EQ(version(), before);
  logs_.logs["ns/pi-launcher-a"] += "a line of the script\n";
  poller_.poll_once();  // still nothing new
  EXPECT_EQ(version(), before);
  logs_.logs["ns/pi-launcher-a"] += "korovod-progress {\"step\":21}\n";
  poller_.poll_once();
  EXPECT_EQ(progress()["step"], 21);
  EXPECT_FALSE(progress().contains("totalSteps"));  // the line is the whole truth
}

TEST_F(ProgressPollerTest, ARecreatedLauncherClearsTheProgressUntilItPrintsALine) {
  add_launcher_pod("pi-launcher-a", "Failed");
  logs_.logs["ns/pi-launcher-a"] = "korovod-progress {\"step\":70}\n";
  poller_.poll_once();
  EXPECT_EQ(progress()["step"], 70);
  add_launcher_pod("pi-launcher-b", "Running");  // the Job's retry: training starts from scratch
  logs_.logs["ns/pi-launcher-b"] = "loading data\n";
  poller_.poll_once();
  EXPECT_TRUE(progress().is_null()) << progress();
  EXPECT_EQ(metrics_.render().find("korovod_mpijob_progress_step{"), std::string::npos);
  logs_.logs["ns/pi-launcher-b"] += "korovod-progress {\"step\":3}\n";
  poller_.poll_once();
  EXPECT_EQ(progress()["step"], 3);
  EXPECT_EQ(progress()["launcherPod"], "pi-launcher-b");
}

TEST_F(ProgressPollerTest, ARestartedLauncherContainerClearsTheProgressToo) {
  add_launcher_pod("pi-launcher-a", "Running");
  logs_.logs["ns/pi-launcher-a"] = "korovod-progress {\"step\":70}\n";
  poller_.poll_once();
  EXPECT_EQ(progress()["step"], 70);
  kube::Object pod = client_.get(kube::resources::kPods, "ns", "pi-launcher-a");  // restartPolicy OnFailure
  pod["status"]["containerStatuses"] = {{{"name", "mpi-launcher"}, {"restartCount", 1}}};
  client_.update_status(kube::resources::kPods, "ns", pod);
  logs_.logs["ns/pi-launcher-a"] = "loading data\n";  // the new container's log
  poller_.poll_once();
  EXPECT_TRUE(progress().is_null()) << progress();
  logs_.logs["ns/pi-launcher-a"] += "korovod-progress {\"step\":2}\n";
  poller_.poll_once();
  EXPECT_EQ(progress()["step"], 2);
  EXPECT_EQ(progress()["launcherRestarts"], 1);
  logs_.logs["ns/pi-launcher-a"] += "the script's own line\n";
  poller_.poll_once();  // same container: kept
  EXPECT_EQ(progress()["step"], 2);
}

TEST_F(ProgressPollerTest, KeepsTheProgressWhenTheLineLeftTheTailOrTheLogCannotBeRead) {
  add_launcher_pod("pi-launcher-a", "Running");
  logs_.logs["ns/pi-launcher-a"] = "korovod-progress {\"step\":9}\n";
  poller_.poll_once();
  logs_.logs["ns/pi-launcher-a"] = "only the script's own lines in the tail\n";
  poller_.poll_once();
  EXPECT_EQ(progress()["step"], 9);
  logs_.logs.clear();  // the API server cannot reach the kubelet for a while
  poller_.poll_once();
  EXPECT_EQ(progress()["step"], 9);
}

TEST_F(ProgressPollerTest, AFinishedJobIsReadOnceForItsFinalLine) {
  add_launcher_pod("pi-launcher-a", "Succeeded");
  logs_.logs["ns/pi-launcher-a"] = "korovod-progress {\"step\":100,\"total_steps\":100}\n";
  set_condition("Succeeded");
  poller_.poll_once();
  EXPECT_EQ(progress()["step"], 100);
  EXPECT_EQ(metrics_.render().find("korovod_mpijob_progress_step{"), std::string::npos);  // gauges: running jobs
  const int reads = logs_.reads;
  poller_.poll_once();
  EXPECT_EQ(logs_.reads, reads);
}

TEST_F(ProgressPollerTest, ReadsOnlyTheLauncherJobTheMPIJobControls) {
  // A user's own Job that took the launcher's name: its pods' lines are not this job's progress.
  kube::Object job = client_.get(kube::resources::kJobs, "ns", "pi-launcher");
  job["metadata"].erase("ownerReferences");
  client_.update(kube::resources::kJobs, "ns", job);
  add_launcher_pod("pi-launcher-a", "Running");
  logs_.logs["ns/pi-launcher-a"] = "korovod-progress {\"step\":999}\n";
  poller_.poll_once();
  EXPECT_EQ(logs_.reads, 0);
  EXPECT_TRUE(progress().is_null());
}

TEST_F(ProgressPollerTest, WaitsForALauncherPodWithALog) {
  add_launcher_pod("pi-launcher-a", "Pending");
  poller_.poll_once();
  EXPECT_EQ(logs_.reads, 0);
  EXPECT_TRUE(progress().is_null());
}

}  // namespace
}  // namespace controller
