// DockerContainer, DockerNetwork and probe_docker against a fake ProcessLauncher: which docker
// commands run, that signals reach the container and not the client, what an exit code of 125
// says, and that the run's cleanup removes its containers before its network.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <mutex>
#include <thread>

#include "kube/fake_clock.h"
#include "local/docker/docker_container.h"
#include "local/process/fake_process_launcher.h"

namespace local {
namespace {
namespace fs = std::filesystem;

DockerOptions options() {
  DockerOptions o;
  o.docker = "docker";
  o.client_env = {{"PATH", "/usr/bin"}, {"DOCKER_HOST", "unix:///d.sock"}};
  o.run_id = "r1";
  o.network = "korovod-r1";
  return o;
}

using Argv = std::vector<std::string>;

// A fake docker CLI: `docker run` runs until ended or killed through `docker kill`; the other
// commands end at once with what `answer` says (exit code and output lines).
struct FakeDocker {
  std::function<std::pair<int, Argv>(const Argv&)> answer = [](const Argv&) {
    return std::pair<int, Argv>{0, {}};
  };
  bool ignore_sigterm = false;
  FakeProcessLauncher* self = nullptr;

  FakeProcessLauncher::OnStart on_start() {
    return [this](const Exec& exec, const LineSink& sink) -> std::optional<int> {
      if (exec.argv.at(1) == "run") return std::nullopt;
      auto [code, lines] = answer(exec.argv);
      for (const auto& l : lines) sink(l);
      if (exec.argv.at(1) == "kill" && code == 0 && !(ignore_sigterm && exec.argv.at(3) == "SIGTERM")) {
        // The container dies of the signal and its client exits with 128 + n (the first run).
        self->end(0, exec.argv.at(3) == "SIGKILL" ? 137 : 143);
      }
      return code;
    };
  }
};

std::vector<Argv> argvs(const FakeProcessLauncher& l) {
  std::vector<Argv> out;
  for (size_t i = 0; i < l.started(); ++i) out.push_back(l.exec(i).argv);
  return out;
}

class DockerContainerTest : public ::testing::Test {
 protected:
  void SetUp() override { fake.self = &launcher; }
  std::unique_ptr<DockerContainer> start() {
    return std::make_unique<DockerContainer>(
        launcher, options(), "korovod-r1-p-c-1", "p", "img:1",
        Argv{"docker", "run", "--rm", "--name", "korovod-r1-p-c-1", "img:1"},
        [this](const std::string& line) {
          std::lock_guard<std::mutex> lock(mu);
          lines.push_back(line);
        });
  }
  FakeDocker fake;
  FakeProcessLauncher launcher{fake.on_start()};
  kube::FakeClock clock;
  std::mutex mu;
  std::vector<std::string> lines;
};

TEST_F(DockerContainerTest, TheClientRunsWithTheDockerEnvironmentOnly) {
  auto c = start();
  ASSERT_EQ(launcher.started(), 1u);
  EXPECT_EQ(launcher.exec(0).env, options().client_env);
  EXPECT_FALSE(c->poll());
  launcher.end(0, 0);
  EXPECT_EQ(c->poll(), 0);
}

TEST_F(DockerContainerTest, SigtermGoesToTheContainerNotTheClient) {
  auto c = start();
  c->signal(SIGTERM);
  EXPECT_EQ(argvs(launcher)[1], (Argv{"docker", "kill", "--signal", "SIGTERM", "korovod-r1-p-c-1"}));
  EXPECT_TRUE(launcher.signals(0).empty()) << "the client itself was signalled";
  EXPECT_EQ(c->wait(), 143);
}

TEST_F(DockerContainerTest, StopProcessKillsTheContainerAfterTheGracePeriod) {
  fake.ignore_sigterm = true;  // a shell as the container's pid 1 ignores SIGTERM
  auto c = start();
  int code = -1;
  std::thread stopper([&] { code = stop_process(*c, std::chrono::milliseconds(100), clock); });
  uint64_t waits = 0;
  while (launcher.started() < 3) {  // fake time runs until the SIGKILL
    if (clock.wait_for_waits_started(waits + 1, std::chrono::milliseconds(10))) {
      ++waits;
      clock.advance(std::chrono::milliseconds(20));
    }
  }
  stopper.join();
  EXPECT_EQ(code, 137);
  const auto all = argvs(launcher);
  EXPECT_EQ(all[1], (Argv{"docker", "kill", "--signal", "SIGTERM", "korovod-r1-p-c-1"}));
  EXPECT_EQ(all[2], (Argv{"docker", "kill", "--signal", "SIGKILL", "korovod-r1-p-c-1"}));
  EXPECT_TRUE(launcher.signals(0).empty()) << "the client itself was signalled";
}

TEST_F(DockerContainerTest, WhenThereIsNoContainerYetTheClientIsStoppedAndTheNameRemoved) {
  fake.answer = [](const Argv& argv) {
    if (argv.at(1) == "kill") return std::pair<int, Argv>{1, {"Error: No such container: korovod-r1-p-c-1"}};
    return std::pair<int, Argv>{0, {}};
  };
  auto c = start();
  c->signal(SIGKILL);
  EXPECT_EQ(launcher.signals(0), (std::vector<int>{SIGKILL}));
  EXPECT_EQ(c->wait(), 137);
  EXPECT_EQ(argvs(launcher).back(), (Argv{"docker", "rm", "-f", "korovod-r1-p-c-1"}));
}

TEST_F(DockerContainerTest, ExitCode125NamesThePodAndTheImage) {
  auto c = start();
  launcher.say(0, "docker: Error response from daemon: pull access denied for img");
  launcher.end(0, 125);
  EXPECT_EQ(c->poll(), 125);
  EXPECT_EQ(c->poll(), 125);
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(lines.size(), 2u) << "reported once";
  EXPECT_EQ(lines[1], "korovod: docker could not create the container of pod p from image img:1 "
                      "(docker run exited 125; docker's own message is above)");
}

TEST_F(DockerContainerTest, ARunningContainerIsKilledWhenDropped) {
  auto c = start();
  c.reset();
  EXPECT_EQ(argvs(launcher)[1], (Argv{"docker", "kill", "--signal", "SIGKILL", "korovod-r1-p-c-1"}));
}

TEST_F(DockerContainerTest, StartWritesAPrivateEnvFile) {
  const fs::path dir = fs::temp_directory_path() / ("korovod-docker-test-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const kube::Object pod = {{"metadata", {{"name", "p"}, {"namespace", "default"}}},
                            {"spec", {{"containers", {{{"name", "c"}, {"image", "img:1"}}}}}}};
  LaunchSpec launch;
  launch.hostname = "p";
  launch.env = {{"SECRET", "s3"}};
  auto c = start_docker_container(launcher, options(), pod, pod["spec"]["containers"][0], launch,
                                  "korovod-r1-p-c-1", dir, nullptr);
  const Argv argv = launcher.exec(0).argv;
  EXPECT_EQ(argv.at(1), "run");
  EXPECT_EQ(argv.back(), "img:1");
  std::ifstream in(dir / "c.env");
  std::string content((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(content, "SECRET=s3\n");
  EXPECT_EQ(fs::status(dir / "c.env").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  launcher.end(0, 0);
  c.reset();
  fs::remove_all(dir);
}

TEST_F(DockerContainerTest, ContainerIpComesFromInspect) {
  fake.answer = [](const Argv&) { return std::pair<int, Argv>{0, {"172.18.0.3 "}}; };
  EXPECT_EQ(docker_container_ip(launcher, options(), "n"), "172.18.0.3");
  EXPECT_EQ(argvs(launcher)[0][1], "inspect");
  fake.answer = [](const Argv&) { return std::pair<int, Argv>{1, {"Error: No such object: n"}}; };
  EXPECT_EQ(docker_container_ip(launcher, options(), "n"), "");
}

TEST_F(DockerContainerTest, ProbeReadsWhatTheDaemonCanLimit) {
  fake.answer = [](const Argv&) {
    return std::pair<int, Argv>{0, {"true false"}};
  };
  const DockerCapabilities can = probe_docker(launcher, options());
  EXPECT_EQ(argvs(launcher)[0], (Argv{"docker", "info", "--format", "{{.CPUCfsQuota}} {{.MemoryLimit}}"}));
  EXPECT_TRUE(can.cpu_limits);
  EXPECT_FALSE(can.memory_limits);
}

TEST_F(DockerContainerTest, ADaemonThatDoesNotAnswerIsAClearError) {
  fake.answer = [](const Argv&) {
    return std::pair<int, Argv>{1, {"false false", "Cannot connect to the Docker daemon at unix:///d.sock."}};
  };
  try {
    probe_docker(launcher, options());
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("docker daemon does not answer"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("exited 1: Cannot connect"), std::string::npos) << e.what();
  }
}

TEST_F(DockerContainerTest, TheNetworkIsLabelledAndRemovedAfterTheRunsContainers) {
  int listed = 0;
  fake.answer = [&](const Argv& argv) {
    if (argv.at(1) == "ps" && listed++ == 0) return std::pair<int, Argv>{0, {"c0ffee", "decaf"}};
    return std::pair<int, Argv>{0, {}};
  };
  {
    DockerNetwork network(launcher, options(), clock);
    EXPECT_EQ(argvs(launcher)[0], (Argv{"docker", "network", "create", "--driver", "bridge", "--label",
                                        "korovod.run=r1", "korovod-r1"}));
    std::vector<std::string> problems;
    std::thread remover([&] { problems = network.remove_all(); });
    // The first round removed two containers; the second, 250 ms later on the clock, finds none.
    while (launcher.started() < 4) std::this_thread::yield();
    ASSERT_TRUE(clock.wait_for_waits_started(1));
    clock.advance(std::chrono::milliseconds(250));
    remover.join();
    EXPECT_TRUE(problems.empty());
  }  // already removed: the destructor runs nothing more
  const auto all = argvs(launcher);
  ASSERT_EQ(all.size(), 6u);
  EXPECT_EQ(all[1], (Argv{"docker", "ps", "-aq", "--filter", "label=korovod.run=r1"}));
  EXPECT_EQ(all[2], (Argv{"docker", "rm", "-f", "c0ffee", "decaf"}));
  EXPECT_EQ(all[3], (Argv{"docker", "network", "rm", "korovod-r1"}));
  EXPECT_EQ(all[5], (Argv{"docker", "network", "rm", "korovod-r1"}));
}

TEST_F(DockerContainerTest, ANetworkThatCannotBeCreatedSaysWhy) {
  fake.answer = [](const Argv&) { return std::pair<int, Argv>{1, {"Error response from daemon: boom"}}; };
  EXPECT_THROW(DockerNetwork(launcher, options(), clock), std::runtime_error);
}

}  // namespace
}  // namespace local
