// The pod runtime with Isolation::Docker, over a fake ProcessLauncher and a FakeClock: a pod
// becomes `docker run` of its image with the pod's env in a private env file (nothing of the
// host's), volumes mounted at their paths with a kubelet's ownership, podIP from the container,
// and a deleted pod's container is stopped through `docker kill`, not by signalling the client.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <mutex>

#include "kube/fake_clock.h"
#include "kube/memory_client.h"
#include "local/process/fake_process_launcher.h"
#include "local/pods/pod_runtime.h"

namespace local {
namespace {
namespace fs = std::filesystem;
using Argv = std::vector<std::string>;

class PodRuntimeDockerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("korovod-docker-runtime-test-" + std::to_string(getpid()));
    fs::remove_all(dir);
    launcher = std::make_unique<FakeProcessLauncher>([this](const Exec& e, const LineSink& sink) {
      return fake_docker(e, sink);
    });
    RuntimeOptions o;
    o.work_dir = dir;
    o.isolation = Isolation::Docker;
    o.docker.docker = "docker";
    o.docker.client_env = {{"PATH", "/usr/bin"}};
    o.docker.run_id = "r1";
    o.docker.network = "korovod-r1";
    o.poll_interval = kPoll;
    runtime = std::make_unique<PodRuntime>(client, clock, *launcher, o);
    const auto before = clock.waits_started();
    runtime->start();
    ASSERT_TRUE(clock.wait_for_waits_started(before + 1));
  }
  void TearDown() override {
    runtime.reset();
    fs::remove_all(dir);
  }
  // docker run runs until docker kill; inspect knows the address; the rest succeeds.
  std::optional<int> fake_docker(const Exec& e, const LineSink& sink) {
    const std::string verb = e.argv.at(1);
    if (verb == "run") {
      std::lock_guard<std::mutex> lock(mu);
      runs.push_back(launcher->started());
      return std::nullopt;
    }
    if (verb == "inspect") sink("172.18.0.5 ");
    if (verb == "kill") {
      std::lock_guard<std::mutex> lock(mu);
      for (size_t i : runs) launcher->end(i, e.argv.at(3) == "SIGKILL" ? 137 : 143);
    }
    return 0;
  }
  void pass() {
    const auto before = clock.waits_started();
    clock.advance(kPoll);
    ASSERT_TRUE(clock.wait_for_waits_started(before + 1));
  }
  std::vector<Argv> with_verb(const std::string& verb) {
    std::vector<Argv> out;
    for (size_t i = 0; i < launcher->started(); ++i) {
      if (launcher->exec(i).argv.at(1) == verb) out.push_back(launcher->exec(i).argv);
    }
    return out;
  }
  kube::Object worker_pod() {
    return {{"metadata", {{"name", "pi-worker-0"}}},
            {"spec", {{"hostname", "pi-worker-0"}, {"subdomain", "pi"}, {"restartPolicy", "Never"},
                      {"securityContext", {{"fsGroup", static_cast<int64_t>(getgid())}}},
                      {"volumes", {{{"name", "ssh"}, {"secret", {{"secretName", "pi-ssh"}, {"defaultMode", 0600}}}},
                                   {{"name", "scratch"}, {"emptyDir", kube::Object::object()}}}},
                      {"containers", {{{"name", "worker"}, {"image", "korovod-worker-cpu:0.1.0"},
                                       {"command", {"/usr/sbin/sshd", "-De"}},
                                       {"env", {{{"name", "K_MPI_JOB_ROLE"}, {"value", "worker"}}}},
                                       {"volumeMounts", {{{"name", "ssh"}, {"mountPath", "/root/.ssh"}},
                                                         {{"name", "scratch"}, {"mountPath", "/scratch"}}}}}}}}}};
  }
  void create_worker() {
    client.create(kube::resources::kSecrets, "default",
                  {{"metadata", {{"name", "pi-ssh"}}}, {"data", {{"id_rsa", "a2V5"}}}});
    client.create(kube::resources::kPods, "default", worker_pod());
  }

  static constexpr std::chrono::milliseconds kPoll{100};
  kube::FakeClock clock;
  kube::MemoryClient client{clock};
  std::unique_ptr<FakeProcessLauncher> launcher;
  fs::path dir;
  std::unique_ptr<PodRuntime> runtime;
  std::mutex mu;
  std::vector<size_t> runs;  // GUARDED_BY(mu)
};

TEST_F(PodRuntimeDockerTest, APodIsADockerRunOfItsImageWithItsEnvAndVolumes) {
  create_worker();
  pass();
  const auto run = with_verb("run");
  ASSERT_EQ(run.size(), 1u);
  const Argv& argv = run[0];
  EXPECT_EQ(argv[4], "korovod-r1-pi-worker-0-worker-1");
  EXPECT_NE(std::find(argv.begin(), argv.end(), "pi-worker-0.pi.default.svc"), argv.end());
  const fs::path pod_dir = runtime->pod_dir("default", "pi-worker-0");
  const fs::path ssh = pod_dir / "volumes" / "ssh";
  EXPECT_NE(std::find(argv.begin(), argv.end(), "type=bind,source=" + ssh.string() + ",target=/root/.ssh,readonly"),
            argv.end());
  EXPECT_EQ((Argv(argv.end() - 4, argv.end())), (Argv{"--entrypoint", "/usr/sbin/sshd", "korovod-worker-cpu:0.1.0", "-De"}));
  std::ifstream in(pod_dir / "worker.env");
  std::string env((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(env, "K_MPI_JOB_ROLE=worker\n") << "only the pod's env: no host PATH, HOME or PYTHONPATH";
  // fsGroup: the secret's 0600 file is group-readable, emptyDir writable by anyone (a kubelet's).
  EXPECT_EQ(fs::status(ssh / "id_rsa").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  EXPECT_EQ(fs::status(pod_dir / "volumes" / "scratch").permissions() & fs::perms::all, fs::perms::all);
  EXPECT_TRUE(with_verb("kill").empty());
}

TEST_F(PodRuntimeDockerTest, PodIpIsTheContainersAddress) {
  create_worker();
  pass();
  pass();
  const auto pod = client.get(kube::resources::kPods, "default", "pi-worker-0");
  EXPECT_EQ(pod["status"]["phase"], "Running");
  EXPECT_EQ(pod["status"]["podIP"], "172.18.0.5");
  const auto inspect = with_verb("inspect");
  ASSERT_FALSE(inspect.empty());
  EXPECT_EQ(inspect[0].back(), "korovod-r1-pi-worker-0-worker-1");
}

TEST_F(PodRuntimeDockerTest, ADeletedPodsContainerIsStoppedThroughDockerKill) {
  create_worker();
  pass();
  client.remove(kube::resources::kPods, "default", "pi-worker-0", {});
  pass();
  EXPECT_EQ(with_verb("kill"), (std::vector<Argv>{{"docker", "kill", "--signal", "SIGTERM",
                                                    "korovod-r1-pi-worker-0-worker-1"}}));
  EXPECT_TRUE(launcher->signals(0).empty()) << "the docker client itself was signalled";
}

}  // namespace
}  // namespace local
