#include "local/pods/pod_status.h"

#include <gtest/gtest.h>

namespace local {
namespace {

using State = ContainerRunState::State;

ContainerRunState container(State s, int exit_code = 0, bool started = true) {
  ContainerRunState c;
  c.name = "c";
  c.state = s;
  c.exit_code = exit_code;
  c.reason = s == State::Terminated ? termination_reason(exit_code) : "";
  c.ever_started = started;
  return c;
}

TEST(PodPhase, FollowsContainerStates) {
  PodRunState p;
  p.containers = {container(State::Waiting, 0, false)};
  EXPECT_EQ(pod_phase(p), "Pending");
  p.containers = {container(State::Running)};
  EXPECT_EQ(pod_phase(p), "Running");
  p.containers = {container(State::Terminated, 0), container(State::Running)};
  EXPECT_EQ(pod_phase(p), "Running");
  p.containers = {container(State::Terminated, 0), container(State::Terminated, 0)};
  EXPECT_EQ(pod_phase(p), "Succeeded");
  p.containers = {container(State::Terminated, 0), container(State::Terminated, 3)};
  EXPECT_EQ(pod_phase(p), "Failed");
  p.containers = {container(State::Running)};
  p.failure_reason = "LocalRuntimeError";
  EXPECT_EQ(pod_phase(p), "Failed");
}

TEST(ShouldRestart, HonoursRestartPolicy) {
  EXPECT_TRUE(should_restart("Always", 0));
  EXPECT_TRUE(should_restart("", 1));
  EXPECT_TRUE(should_restart("OnFailure", 1));
  EXPECT_FALSE(should_restart("OnFailure", 0));
  EXPECT_FALSE(should_restart("Never", 1));
}

TEST(PodStatusJson, ReportsExitCodeRestartsAndConditions) {
  PodRunState p;
  auto c = container(State::Terminated, 137);
  c.restart_count = 2;
  c.last_exit_code = 1;
  p.containers = {c};
  const auto now = std::chrono::system_clock::now();
  auto s = pod_status_json(p, now, kube::Object::object());
  EXPECT_EQ(s["phase"], "Failed");
  EXPECT_EQ(s["podIP"], "127.0.0.1");
  const auto& cs = s["containerStatuses"][0];
  EXPECT_EQ(cs["state"]["terminated"]["exitCode"], 137);
  EXPECT_EQ(cs["state"]["terminated"]["reason"], "Error");
  EXPECT_EQ(cs["restartCount"], 2);
  EXPECT_EQ(cs["lastState"]["terminated"]["exitCode"], 1);
  std::map<std::string, std::string> conds;
  for (const auto& k : s["conditions"]) conds[k["type"]] = k["status"];
  EXPECT_EQ(conds["PodScheduled"], "True");
  EXPECT_EQ(conds["Initialized"], "True");
  EXPECT_EQ(conds["ContainersReady"], "False");
  EXPECT_EQ(conds["Ready"], "False");
}

TEST(PodStatusJson, KeepsTransitionTimeWhileAConditionHolds) {
  PodRunState p;
  p.containers = {container(State::Running)};
  const auto t0 = std::chrono::system_clock::time_point(std::chrono::seconds(1000));
  auto first = pod_status_json(p, t0, kube::Object::object());
  auto second = pod_status_json(p, t0 + std::chrono::seconds(50), first);
  EXPECT_EQ(first["conditions"], second["conditions"]);
  EXPECT_EQ(second["conditions"][3]["status"], "True");
}

}  // namespace
}  // namespace local
