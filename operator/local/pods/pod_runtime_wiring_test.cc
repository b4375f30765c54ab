// The pod runtime's wiring, with a fake ProcessLauncher and a FakeClock: what a pod's container
// starts as, how exit codes become container states and phases, how a deleted pod's process is
// stopped (SIGTERM, the grace period, SIGKILL) and the crash-loop back-off — no real process
// and no real sleep. pod_runtime_test.cc runs the same runtime with real processes.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <map>

#include "kube/fake_clock.h"
#include "kube/memory_client.h"
#include "local/process/fake_process_launcher.h"
#include "local/pods/pod_runtime.h"

namespace local {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

class PodRuntimeWiringTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("korovod-wiring-test-" + std::to_string(getpid()));
    fs::remove_all(dir);
  }
  void TearDown() override {
    runtime.reset();
    fs::remove_all(dir);
  }
  // Starts the runtime and lets its first pass run (it then waits poll_interval on the clock).
  void start(FakeProcessLauncher::OnStart on_start = nullptr) {
    launcher = std::make_unique<FakeProcessLauncher>(std::move(on_start));
    RuntimeOptions o;
    o.work_dir = dir;
    o.isolation = Isolation::Rewrite;
    o.defaults.host_path_env = "/usr/bin:/bin";
    o.poll_interval = kPoll;
    o.log = [this](const std::string& pod, const std::string& container, const std::string& line) {
      std::lock_guard<std::mutex> lock(mu);
      lines.push_back(pod + "/" + container + ": " + line);
    };
    runtime = std::make_unique<PodRuntime>(client, clock, *launcher, o);
    const auto before = clock.waits_started();
    runtime->start();
    ASSERT_TRUE(clock.wait_for_waits_started(before + 1));
  }
  // One more pass of the runtime's loop, `d` of fake time after the last one.
  void pass(std::chrono::milliseconds d = kPoll) {
    const auto before = clock.waits_started();
    clock.advance(d);
    ASSERT_TRUE(clock.wait_for_waits_started(before + 1)) << "the runtime's loop did not come back";
  }
  kube::Object pod_spec(const std::string& name, const std::string& policy, int grace_s = 30) {
    return {{"metadata", {{"name", name}}},
            {"spec", {{"restartPolicy", policy},
                      {"terminationGracePeriodSeconds", grace_s},
                      {"containers", {{{"name", "c"},
                                       {"command", {"trainer", "--epochs"}},
                                       {"args", {"3"}},
                                       {"env", {{{"name", "X"}, {"value", "hello"}}}}}}}}}};
  }
  void create(const kube::Object& pod) { client.create(kube::resources::kPods, "default", pod); }
  kube::Object get(const std::string& name) { return client.get(kube::resources::kPods, "default", name); }
  static std::string phase(const kube::Object& p) { return field(p, "status").value("phase", ""); }
  static kube::Object container_status(const kube::Object& p) {
    return p["status"]["containerStatuses"][0];
  }

  static constexpr std::chrono::milliseconds kPoll{100};
  kube::FakeClock clock;
  kube::MemoryClient client{clock};
  std::unique_ptr<FakeProcessLauncher> launcher;
  fs::path dir;
  std::unique_ptr<PodRuntime> runtime;
  std::mutex mu;
  std::vector<std::string> lines;  // GUARDED_BY(mu)
};

TEST_F(PodRuntimeWiringTest, StartsTheContainersCommandWithItsEnvInThePodDirectory) {
  start([](const Exec&, const LineSink& sink) -> std::optional<int> {
    sink("epoch 1");
    return std::nullopt;
  });
  create(pod_spec("p", "Never"));
  pass();
  ASSERT_EQ(launcher->started(), 1u);
  const Exec exec = launcher->exec(0);
  // Rewrite isolation: the working directory (the pod's, by default) through env -C.
  EXPECT_EQ(exec.argv, (std::vector<std::string>{"/usr/bin/env", "-C", runtime->pod_dir("default", "p").string(),
                                                 "trainer", "--epochs", "3"}));
  EXPECT_EQ(get_env(exec.env, "X"), "hello");
  EXPECT_EQ(get_env(exec.env, "HOSTNAME"), "p");
  EXPECT_EQ(get_env(exec.env, "PATH"), "/usr/bin:/bin");
  const auto pod = get("p");
  EXPECT_EQ(phase(pod), "Running");
  EXPECT_TRUE(container_status(pod)["state"].contains("running"));
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(lines, (std::vector<std::string>{"p/c: epoch 1"}));
}

TEST_F(PodRuntimeWiringTest, ExitCodesBecomeContainerStatesAndPhases) {
  start();
  create(pod_spec("ok", "Never"));
  create(pod_spec("bad", "Never"));
  create(pod_spec("killed", "Never"));
  pass();
  ASSERT_EQ(launcher->started(), 3u);
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < 3; ++i) index[*get_env(launcher->exec(i).env, "HOSTNAME")] = i;
  launcher->end(index["ok"], 0);
  launcher->end(index["bad"], 3);
  launcher->end(index["killed"], 128 + SIGKILL);
  pass();
  auto ok = get("ok"), bad = get("bad"), killed = get("killed");
  EXPECT_EQ(phase(ok), "Succeeded");
  EXPECT_EQ(container_status(ok)["state"]["terminated"]["exitCode"], 0);
  EXPECT_EQ(container_status(ok)["state"]["terminated"]["reason"], "Completed");
  EXPECT_EQ(phase(bad), "Failed");
  EXPECT_EQ(container_status(bad)["state"]["terminated"]["exitCode"], 3);
  EXPECT_EQ(container_status(bad)["state"]["terminated"]["reason"], "Error");
  EXPECT_EQ(phase(killed), "Failed");
  EXPECT_EQ(container_status(killed)["state"]["terminated"]["exitCode"], 137);
}

TEST_F(PodRuntimeWiringTest, AContainerThatCannotStartIsAStartError) {
  start([](const Exec&, const LineSink&) -> std::optional<int> {
    throw std::runtime_error("executable file not found in $PATH: trainer");
  });
  create(pod_spec("p", "Never"));
  pass();
  const auto pod = get("p");
  EXPECT_EQ(phase(pod), "Failed");
  const kube::Object terminated = container_status(pod)["state"]["terminated"];
  EXPECT_EQ(terminated["reason"], "StartError");
  EXPECT_EQ(terminated["exitCode"], 128);
  EXPECT_EQ(terminated["message"], "executable file not found in $PATH: trainer");
}

TEST_F(PodRuntimeWiringTest, ADeletedPodGetsSigtermThenSigkillOnceItsGracePeriodEnds) {
  start();
  launcher->ignore_sigterm(true);
  create(pod_spec("p", "Always", /*grace_s=*/2));
  pass();
  ASSERT_EQ(launcher->started(), 1u);
  client.remove(kube::resources::kPods, "default", "p", {});
  const auto waits = clock.waits_started();
  clock.advance(kPoll);  // the loop's next pass finds the pod gone and stops its process
  ASSERT_TRUE(launcher->wait_for_signal(0, SIGTERM));
  // The process ignores SIGTERM: nothing more until its 2 s of grace have passed on the clock.
  ASSERT_TRUE(clock.wait_for_waits_started(waits + 1));  // stop_process waits on the clock
  clock.advance(1990ms);
  ASSERT_TRUE(clock.wait_for_waits_started(waits + 2));  // ... and again, for the last 10 ms
  EXPECT_EQ(launcher->signals(0), (std::vector<int>{SIGTERM}));
  clock.advance(10ms);
  ASSERT_TRUE(launcher->wait_for_signal(0, SIGKILL));
  EXPECT_EQ(launcher->signals(0), (std::vector<int>{SIGTERM, SIGKILL}));
}

TEST_F(PodRuntimeWiringTest, AProcessThatEndsOnSigtermIsNotKilled) {
  start();
  create(pod_spec("p", "Always"));
  pass();
  client.remove(kube::resources::kPods, "default", "p", {});
  pass();
  EXPECT_EQ(launcher->signals(0), (std::vector<int>{SIGTERM}));
}

// The kubelet's back-off on the clock: 10 s before the first restart, 20 s before the second.
TEST_F(PodRuntimeWiringTest, OnFailureRestartsAfterTheBackoffOnTheClock) {
  start();
  create(pod_spec("b", "OnFailure"));
  pass();
  launcher->end(0, 1);
  pass();  // the exit is seen: back-off starts now
  auto pod = get("b");
  EXPECT_EQ(container_status(pod)["state"]["waiting"]["reason"], "CrashLoopBackOff");
  for (int i = 0; i < 9; ++i) pass(1s);
  EXPECT_EQ(launcher->started(), 1u) << "restarted before the 10 s back-off";
  pass(1s);
  ASSERT_EQ(launcher->started(), 2u);
  EXPECT_EQ(container_status(get("b"))["restartCount"], 1);
  EXPECT_EQ(launcher->exec(1).argv, launcher->exec(0).argv);
  launcher->end(1, 1);
  pass();
  for (int i = 0; i < 19; ++i) pass(1s);
  EXPECT_EQ(launcher->started(), 2u) << "restarted before the 20 s back-off";
  pass(1s);
  EXPECT_EQ(launcher->started(), 3u);
  EXPECT_EQ(container_status(get("b"))["restartCount"], 2);
  EXPECT_EQ(container_status(get("b"))["lastState"]["terminated"]["exitCode"], 1);
}

}  // namespace
}  // namespace local
