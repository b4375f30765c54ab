// `korovod kubelet` against the in-memory API, on a FakeClock with a fake ProcessLauncher: the
// Node and its Lease are registered at once and renewed when the heartbeat period has passed on
// the clock (no real 10 s wait), only pods bound to the node are started (with the host's
// sanitizer options in their env), and `stop` ends it.
#include "local/kubelet/kubelet.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <sstream>
#include <thread>

#include "kube/fake_clock.h"
#include "kube/memory_client.h"
#include "local/process/fake_process_launcher.h"

namespace local {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

const kube::Resource kLeases{"coordination.k8s.io", "v1", "leases", "Lease", true};

// Polls (really, up to 5 s) until pred() holds.
bool eventually(const std::function<bool()>& pred) {
  for (int i = 0; i < 500; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return pred();
}

std::string renew_time(kube::Client& client) {
  try {
    return client.get(kLeases, "kube-node-lease", "n1")["spec"].value("renewTime", "");
  } catch (const kube::ApiError&) {
    return "";
  }
}

// One kubelet "n1" on its own thread, stopped and joined when the test ends (a failed ASSERT too).
class Kubelet : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    KubeletOptions o;
    o.node_name = "n1";
    o.work_dir = dir_;
    o.bin_dir = dir_ / "bin";
    o.host_path = "/usr/bin:/bin";
    o.host_sanitizer_env = {{"ASAN_OPTIONS", "detect_leaks=1"}, {"LSAN_OPTIONS", "suppressions=/host.supp"}};
    kubelet_ = std::thread([this, o] {
      code_ = run_kubelet(client_, clock_, launcher_, o, stop_, out_);
      returned_ = true;
    });
  }

  void TearDown() override {
    if (kubelet_.joinable()) {
      stop_ = true;
      while (!returned_) {  // its stop check runs every 200 ms of clock time
        clock_.advance(250ms);
        std::this_thread::sleep_for(1ms);
      }
      kubelet_.join();
    }
    fs::remove_all(dir_);
  }

  // A pod that sleeps, bound to `node`, whose container sets its own LSAN_OPTIONS.
  void create_pod(const std::string& name, const std::string& node) {
    client_.create(kube::resources::kPods, "default",
                   {{"metadata", {{"name", name}}},
                    {"spec", {{"nodeName", node},
                              {"containers", {{{"name", "c"},
                                               {"command", {"sleep", "300"}},
                                               {"env", {{{"name", "LSAN_OPTIONS"}, {"value", "pod-own"}}}}}}}}}});
  }

  // 250 ms of clock time: each of the two loops (the kubelet's 200 ms stop check, the pod
  // runtime's 250 ms poll) runs once and waits on the clock again.
  void pass() {
    const auto before = clock_.waits_started();
    clock_.advance(250ms);
    ASSERT_TRUE(clock_.wait_for_waits_started(before + 2));
  }

  std::string pod_phase(const std::string& name) {
    return field(client_.get(kube::resources::kPods, "default", name), "status").value("phase", "");
  }

  const fs::path dir_ = fs::temp_directory_path() / ("korovod-kubelet-test-" + std::to_string(getpid()));
  kube::FakeClock clock_;
  kube::MemoryClient client_{clock_};
  FakeProcessLauncher launcher_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> returned_{false};
  std::ostringstream out_;
  int code_ = -1;
  std::thread kubelet_;
};

TEST_F(Kubelet, RegistersRenewsOnTheClockAndRunsOnlyItsOwnPods) {
  ASSERT_TRUE(eventually([&] { return renew_time(client_) == "2026-01-01T00:00:00.000000Z"; }))
      << renew_time(client_);
  const auto node = client_.get(kube::resources::kNodes, "", "n1");
  EXPECT_EQ(node["status"]["conditions"][0]["type"], "Ready");
  EXPECT_EQ(node["status"]["conditions"][0]["status"], "True");

  create_pod("mine", "n1");
  create_pod("theirs", "n2");
  ASSERT_TRUE(clock_.wait_for_waiters(2));  // both loops wait on the clock
  pass();
  ASSERT_EQ(launcher_.started(), 1u);
  const Exec exec = launcher_.exec(0);
  EXPECT_EQ(get_env(exec.env, "HOSTNAME"), "mine");
  // The host's sanitizer options reach the pod; the container's own value wins.
  EXPECT_EQ(get_env(exec.env, "ASAN_OPTIONS"), "detect_leaks=1");
  EXPECT_EQ(get_env(exec.env, "LSAN_OPTIONS"), "pod-own");
  EXPECT_EQ(std::vector<std::string>(exec.argv.end() - 2, exec.argv.end()),
            (std::vector<std::string>{"sleep", "300"}));
  EXPECT_EQ(pod_phase("mine"), "Running");
  EXPECT_EQ(pod_phase("theirs"), "");

  for (int i = 0; i < 38; ++i) pass();  // 9.75 s: no heartbeat yet
  EXPECT_EQ(renew_time(client_), "2026-01-01T00:00:00.000000Z");
  pass();  // 10 s
  EXPECT_EQ(renew_time(client_), "2026-01-01T00:00:10.000000Z");

  stop_ = true;
  clock_.advance(250ms);
  kubelet_.join();
  EXPECT_EQ(code_, 0);
  EXPECT_EQ(launcher_.signals(0), (std::vector<int>{SIGTERM}));  // its pod stopped on the way out
  EXPECT_EQ(launcher_.started(), 1u);
}

}  // namespace
}  // namespace local
