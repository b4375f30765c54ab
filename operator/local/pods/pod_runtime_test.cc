#include "local/pods/pod_runtime.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <fstream>
#include <thread>

#include "kube/memory_client.h"
#include "kube/fake_clock.h"
#include "local/process/fake_process_launcher.h"
#include "local/process/process.h"
#include "local/rsh/rsh_agent.h"

namespace local {
namespace {
namespace fs = std::filesystem;

class PodRuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("korovod-runtime-test-" + std::to_string(getpid()));
    fs::remove_all(dir);
    RuntimeOptions o;
    o.work_dir = dir;
    o.isolation = Isolation::Rewrite;  // no bwrap needed for these tests
    o.defaults.host_path_env = "/usr/bin:/bin";
    o.poll_interval = std::chrono::milliseconds(20);
    o.restart_backoff = std::chrono::milliseconds(50);  // the kubelet's 10 s would slow the tests
    o.volume_refresh = std::chrono::milliseconds(50);
    o.log = [this](const std::string& pod, const std::string&, const std::string& line) {
      std::lock_guard<std::mutex> lock(mu);
      lines.push_back(pod + ": " + line);
    };
    runtime = std::make_unique<PodRuntime>(client, clock, launcher, o);
  }
  void TearDown() override {
    runtime.reset();
    fs::remove_all(dir);
  }
  void create_pod(const std::string& name, const std::string& script, const std::string& policy) {
    kube::Object pod = {{"metadata", {{"name", name}}},
                        {"spec", {{"restartPolicy", policy},
                                  {"containers", {{{"name", "c"}, {"command", {"sh", "-c", script}},
                                                   {"env", {{{"name", "X"}, {"value", "hello"}}}}}}}}}};
    client.create(kube::resources::kPods, "default", pod);
  }
  // Waits until pred(pod) holds, up to 10 s.
  kube::Object wait_for(const std::string& name, const std::function<bool(const kube::Object&)>& pred) {
    for (int i = 0; i < 500; ++i) {
      auto pod = client.get(kube::resources::kPods, "default", name);
      if (pred(pod)) return pod;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "timed out waiting for " << name;
    return client.get(kube::resources::kPods, "default", name);
  }
  static std::string phase(const kube::Object& p) { return field(p, "status").value("phase", ""); }

  kube::RealClock clock;
  kube::MemoryClient client{clock};
  HostProcessLauncher launcher;
  fs::path dir;
  std::unique_ptr<PodRuntime> runtime;
  std::mutex mu;
  std::vector<std::string> lines;
};

TEST_F(PodRuntimeTest, NeverPolicyReportsFailedWithExitCode) {
  runtime->start();
  create_pod("p", "echo $X; exit 3", "Never");
  auto pod = wait_for("p", [](const kube::Object& p) { return phase(p) == "Failed"; });
  const auto& cs = pod["status"]["containerStatuses"][0];
  EXPECT_EQ(cs["state"]["terminated"]["exitCode"], 3);
  EXPECT_EQ(cs["restartCount"], 0);
  runtime->stop();
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_NE(std::find(lines.begin(), lines.end(), "p: hello"), lines.end());
}

TEST_F(PodRuntimeTest, OnFailurePolicyRestartsUntilSuccess) {
  runtime->start();
  // Fails the first time, succeeds the second (a marker file survives the restart).
  create_pod("q", "if [ -e marker ]; then exit 0; fi; touch marker; exit 1", "OnFailure");
  auto pod = wait_for("q", [](const kube::Object& p) { return phase(p) == "Succeeded"; });
  const auto& cs = pod["status"]["containerStatuses"][0];
  EXPECT_EQ(cs["restartCount"], 1);
  EXPECT_EQ(cs["lastState"]["terminated"]["exitCode"], 1);
}

TEST_F(PodRuntimeTest, DeletingAPodKillsItsProcessGroup) {
  runtime->start();
  create_pod("r", "sleep 300 & echo $! > child.pid; wait", "Always");
  wait_for("r", [](const kube::Object& p) { return phase(p) == "Running"; });
  const fs::path pid_file = runtime->pod_dir("default", "r") / "child.pid";
  for (int i = 0; i < 200 && !fs::exists(pid_file); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  pid_t child = 0;
  std::ifstream(pid_file) >> child;
  ASSERT_GT(child, 0);
  client.remove(kube::resources::kPods, "default", "r", {});
  bool gone = false;
  for (int i = 0; i < 300 && !gone; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    gone = kill(child, 0) != 0 || fs::exists("/proc/" + std::to_string(child)) == false;
    if (!gone) {  // a zombie waiting for its reaper counts as gone
      std::ifstream stat("/proc/" + std::to_string(child) + "/stat");
      std::string pid, comm, state;
      stat >> pid >> comm >> state;
      gone = state == "Z";
    }
  }
  EXPECT_TRUE(gone) << "pid " << child << " survived its pod";
}

TEST_F(PodRuntimeTest, RunningPodSeesItsConfigMapChange) {
  client.create(kube::resources::kConfigMaps, "default",
                {{"metadata", {{"name", "cfg"}}}, {"data", {{"discover_hosts.sh", "#!/bin/sh\n"}}}});
  kube::Object pod = {{"metadata", {{"name", "l"}}},
                      {"spec", {{"restartPolicy", "Never"},
                                {"volumes", {{{"name", "v"}, {"configMap", {{"name", "cfg"}}}}}},
                                {"containers", {{{"name", "c"}, {"command", {"sleep", "300"}}}}}}}};
  client.create(kube::resources::kPods, "default", pod);
  runtime->start();
  wait_for("l", [](const kube::Object& p) { return phase(p) == "Running"; });
  kube::Object cm = client.get(kube::resources::kConfigMaps, "default", "cfg");
  cm["data"]["discover_hosts.sh"] = "#!/bin/sh\necho l-worker-0.l.default.svc:1\n";
  client.update(kube::resources::kConfigMaps, "default", cm);
  const fs::path file = runtime->pod_dir("default", "l") / "volumes" / "v" / "discover_hosts.sh";
  std::string content;
  for (int i = 0; i < 250; ++i) {
    std::ifstream in(file);
    content.assign(std::istreambuf_iterator<char>(in), {});
    if (content.find("l-worker-0") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(content, "#!/bin/sh\necho l-worker-0.l.default.svc:1\n");
}

TEST_F(PodRuntimeTest, DeletingAPodStopsWhatTheRshAgentStartedInIt) {
  runtime->start();
  create_pod("w", "sleep 300", "Always");
  wait_for("w", [](const kube::Object& p) { return phase(p) == "Running"; });
  // What korovod-rsh starts "in" the pod: not the pod's child, marked with the pod's directory.
  const std::string marker = std::string(kRshPodEnv) + "=" + runtime->pod_dir("default", "w").string();
  const pid_t rank = fork();
  if (rank == 0) {
    char* env[] = {const_cast<char*>(marker.c_str()), nullptr};
    char* argv[] = {const_cast<char*>("sleep"), const_cast<char*>("300"), nullptr};
    execve("/bin/sleep", argv, env);
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_TRUE(fs::exists(runtime->pod_dir("default", "w") / "context.json"));
  client.remove(kube::resources::kPods, "default", "w", {});
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 300 && done == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    done = waitpid(rank, &status, WNOHANG);
  }
  if (done == 0) kill(rank, SIGKILL), waitpid(rank, &status, 0);
  EXPECT_EQ(done, rank) << "the rank started through the agent survived its pod";
  EXPECT_FALSE(fs::exists(runtime->pod_dir("default", "w") / "context.json"))
      << "korovod-rsh could still start commands in the deleted pod";
}

TEST(RestartBackoff, DoublesFromTheBaseUpToTheCap) {
  using ms = std::chrono::milliseconds;
  EXPECT_EQ(restart_backoff(0, ms(10'000), ms(300'000)), ms(10'000));
  EXPECT_EQ(restart_backoff(1, ms(10'000), ms(300'000)), ms(20'000));
  EXPECT_EQ(restart_backoff(4, ms(10'000), ms(300'000)), ms(160'000));
  EXPECT_EQ(restart_backoff(5, ms(10'000), ms(300'000)), ms(300'000));
  EXPECT_EQ(restart_backoff(1000, ms(10'000), ms(300'000)), ms(300'000));
}

}  // namespace
}  // namespace local
