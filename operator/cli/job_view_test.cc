// What get / top print, from objects as the API returns them.
#include "cli/job_view.h"

#include <gtest/gtest.h>

namespace cli {
namespace {

using kube::Object;
using std::chrono::seconds;

Object job(const std::string& name, const std::string& state) {
  Object j = {{"metadata", {{"name", name}, {"namespace", "ns1"}, {"creationTimestamp", "2026-12-06T20:00:00Z"}}},
              {"spec", {{"mpiReplicaSpecs", {{"Worker", {{"replicas", 4}}}}}}},
              {"status", {{"readyWorkers", 3}, {"restartCount", 1}, {"startTime", "2026-12-06T20:01:00Z"}}}};
  if (!state.empty()) {
    j["status"]["conditions"] = {{{"type", "Created"}, {"status", "True"}, {"reason", "MPIJobCreated"}, {"message", "c"}},
                                 {{"type", state}, {"status", "True"}, {"reason", "R"}, {"message", "m"}}};
  }
  return j;
}

Clock::time_point at(const std::string& t) { return *parse_time(Object(t)); }

TEST(JobView, HumanDurationIsKubectls) {
  EXPECT_EQ(human_duration(seconds(45)), "45s");
  EXPECT_EQ(human_duration(seconds(119)), "119s");
  EXPECT_EQ(human_duration(seconds(200)), "3m20s");
  EXPECT_EQ(human_duration(seconds(600)), "10m");
  EXPECT_EQ(human_duration(seconds(5 * 3600 + 180)), "5h3m");
  EXPECT_EQ(human_duration(seconds(30 * 3600)), "30h");
  EXPECT_EQ(human_duration(seconds(76 * 3600)), "3d4h");
  EXPECT_EQ(human_duration(seconds(120 * 86400)), "120d");
  EXPECT_EQ(human_duration(seconds(800 * 86400)), "2y");
}

TEST(JobView, RowsFollowTheCrdsPrinterColumns) {
  const auto now = at("2026-12-06T20:05:00Z");
  EXPECT_EQ(job_row(job("a", "Running"), now, false),
            (std::vector<std::string>{"a", "Running", "4", "3", "1", "-", "-", "-", "-", "5m"}));
  EXPECT_EQ(job_row(job("b", ""), now, true),
            (std::vector<std::string>{"ns1", "b", "", "4", "3", "1", "-", "-", "-", "-", "5m"}));
  EXPECT_EQ(top_row(job("a", "Running"), now),
            (std::vector<std::string>{"ns1", "a", "Running", "4", "3", "1", "-", "-", "-", "-", "4m"}));
  Object training = job("a", "Running");  // status.progress, as the operator writes it
  training["status"]["progress"] = {{"step", 120}, {"totalSteps", 540}, {"samplesPerSecond", 3020.44},
                                    {"loss", 0.23108}, {"eta", "2m10s"}};
  EXPECT_EQ(top_row(training, now),
            (std::vector<std::string>{"ns1", "a", "Running", "4", "3", "1", "120", "3020.4", "0.2311", "2m10s", "4m"}));
  EXPECT_NE(describe_job(training, {}, now).find("Progress:    step 120/540 (22%), 3020 samples/s, loss 0.2311, ETA 2m10s\n"),
            std::string::npos)
      << describe_job(training, {}, now);
  EXPECT_TRUE(job_running(job("a", "Running")));
  EXPECT_FALSE(job_running(job("a", "Succeeded")));
  EXPECT_FALSE(job_running(job("a", "Failed")));
}

TEST(JobView, TablesArePaddedAsKubectlPadsThem) {
  EXPECT_EQ(render_table({"NAME", "STATE"}, {{"long-name", "Running"}, {"b", ""}}),
            "NAME        STATE\n"
            "long-name   Running\n"
            "b           \n");
}

TEST(JobView, DescribeNamesEachFailedWorkerAndWhy) {
  Object oom = {{"metadata", {{"name", "a-worker-1"}, {"labels", {{"training.kubeflow.org/job-role", "worker"}}}}},
                {"status", {{"phase", "Running"},
                            {"containerStatuses", {{{"restartCount", 1},
                                                    {"lastState", {{"terminated", {{"exitCode", 137}, {"reason", "OOMKilled"}}}}}}}}}}};
  Object fine = {{"metadata", {{"name", "a-worker-0"}, {"labels", {{"training.kubeflow.org/job-role", "worker"}}}}},
                 {"status", {{"phase", "Running"}}}};
  Object launcher = {{"metadata", {{"name", "a-launcher"}, {"labels", {{"training.kubeflow.org/job-role", "launcher"}}}}},
                     {"status", {{"phase", "Failed"}}}};
  const std::string text = describe_job(job("a", "Failed"), {fine, oom, launcher}, at("2026-12-06T20:05:00Z"));
  EXPECT_NE(text.find("State:       Failed\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Workers:     3 ready of 4\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  Failed=True  R: m\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Failed workers:\n  a-worker-1: OOMKilled, exit code 137 (before its last restart)\n"),
            std::string::npos) << text;
  EXPECT_EQ(text.find("a-worker-0"), std::string::npos) << text;
  EXPECT_EQ(text.find("a-launcher"), std::string::npos) << text;
}

}  // namespace
}  // namespace cli
