// `korovod kubelet` against the in-memory API, on a FakeClock with a fake ProcessLauncher: the
// Node and its Lease are registered at once and renewed when the heartbeat period has passed on
// the clock (no real 10 s wait), only pods bound to the node are started (with the host's
// sanitizer options in their env), and `stop` ends it.
#include "local/kubelet.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <sstream>
#include <thread>

#include "kube/fake_clock.h"
#include "kube/memory_client.h"
#include "local/fake_process_launcher.h"

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

TEST(Kubelet, RegistersRenewsOnTheClockAndRunsOnlyItsOwnPods) {
  const fs::path dir = fs::temp_directory_path() / ("korovod-kubelet-test-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  kube::FakeClock clock;
  kube::MemoryClient client(clock);
  FakeProcessLauncher launcher;
  KubeletOptions o;
  o.node_name = "n1";
  o.work_dir = dir;
  o.bin_dir = dir / "bin";
  o.host_path = "/usr/bin:/bin";
  o.host_sanitizer_env = {{"ASAN_OPTIONS", "detect_leaks=1"}, {"LSAN_OPTIONS", "suppressions=/host.supp"}};
  std::atomic<bool> stop{false};
  std::ostringstream out;
  int code = -1;
  std::atomic<bool> returned{false};
  std::thread kubelet([&] {
    code = run_kubelet(client, clock, launcher, o, stop, out);
    returned = true;
  });
  struct StopAtExit {  // a failed ASSERT still stops and joins the kubelet
    std::atomic<bool>& stop;
    std::atomic<bool>& returned;
    kube::FakeClock& clock;
    std::thread& thread;
    ~StopAtExit() {
      if (!thread.joinable()) return;
      stop = true;
      while (!returned) {  // its stop check runs every 200 ms of clock time
        clock.advance(250ms);
        std::this_thread::sleep_for(1ms);
      }
      thread.join();
    }
  } stop_at_exit{stop, returned, clock, kubelet};

  ASSERT_TRUE(eventually([&] { return renew_time(client) == "2026-01-01T00:00:00.000000Z"; }))
      << renew_time(client);
  const auto node = client.get(kube::resources::kNodes, "", "n1");
  EXPECT_EQ(node["status"]["conditions"][0]["type"], "Ready");
  EXPECT_EQ(node["status"]["conditions"][0]["status"], "True");

  for (const char* name : {"mine", "theirs"}) {
    client.create(kube::resources::kPods, "default",
                  {{"metadata", {{"name", name}}},
                   {"spec", {{"nodeName", std::string(name) == "mine" ? "n1" : "n2"},
                             {"containers", {{{"name", "c"},
                                              {"command", {"sleep", "300"}},
                                              {"env", {{{"name", "LSAN_OPTIONS"}, {"value", "pod-own"}}}}}}}}}});
  }
  // Both loops (the kubelet's 200 ms stop check, the pod runtime's 250 ms poll) wait on the clock.
  ASSERT_TRUE(clock.wait_for_waiters(2));
  auto pass = [&] {  // 250 ms of clock time: each loop runs once and waits again
    const auto before = clock.waits_started();
    clock.advance(250ms);
    ASSERT_TRUE(clock.wait_for_waits_started(before + 2));
  };
  pass();
  ASSERT_EQ(launcher.started(), 1u);
  const Exec exec = launcher.exec(0);
  EXPECT_EQ(get_env(exec.env, "HOSTNAME"), "mine");
  // The host's sanitizer options reach the pod; the container's own value wins.
  EXPECT_EQ(get_env(exec.env, "ASAN_OPTIONS"), "detect_leaks=1");
  EXPECT_EQ(get_env(exec.env, "LSAN_OPTIONS"), "pod-own");
  EXPECT_EQ(std::vector<std::string>(exec.argv.end() - 2, exec.argv.end()),
            (std::vector<std::string>{"sleep", "300"}));
  EXPECT_EQ(field(client.get(kube::resources::kPods, "default", "mine"), "status").value("phase", ""),
            "Running");
  EXPECT_FALSE(client.get(kube::resources::kPods, "default", "theirs").contains("status") &&
               client.get(kube::resources::kPods, "default", "theirs")["status"].contains("phase"));

  for (int i = 0; i < 38; ++i) pass();  // 9.75 s: no heartbeat yet
  EXPECT_EQ(renew_time(client), "2026-01-01T00:00:00.000000Z");
  pass();  // 10 s
  EXPECT_EQ(renew_time(client), "2026-01-01T00:00:10.000000Z");

  stop = true;
  clock.advance(250ms);
  kubelet.join();
  EXPECT_EQ(code, 0);
  EXPECT_EQ(launcher.signals(0), (std::vector<int>{SIGTERM}));  // its pod stopped on the way out
  EXPECT_EQ(launcher.started(), 1u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace local
