// ssh mode's worker and launcher wiring, with a fake ProcessLauncher standing in for ssh-keygen.
#include "local/rsh/ssh_mode.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "local/process/fake_process_launcher.h"

namespace local {
namespace {
namespace fs = std::filesystem;

class SshModeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("korovod-ssh-mode-test-" + std::to_string(getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir / "config");
    std::ofstream(dir / "config" / "ssh_config") << "Host *\n    StrictHostKeyChecking no\n";
  }
  void TearDown() override { fs::remove_all(dir); }

  fs::path dir;
};

TEST_F(SshModeTest, WorkerGetsAHostKeyFromSshKeygenAndRunsSshdOnItsPort) {
  FakeProcessLauncher launcher([](const Exec&, const LineSink&) { return std::optional<int>(0); });
  SshMode ssh(dir / "config", dir, launcher, {{"PATH", "/usr/bin:/bin"}});
  LaunchSpec launch;
  launch.command = {"/usr/sbin/sshd", "-De"};
  launch.env = {{"PATH", "/opt/bin:/usr/bin"}, {"HOSTNAME", "w-0"}, {"RANK", "1"}};
  const fs::path pod_dir = dir / "pods" / "default" / "w-0";
  ssh.adjust_worker("w-0", "w-0.j.default.svc", "/root/.ssh", pod_dir, launch);

  ASSERT_EQ(launcher.started(), 1u);
  const std::string key = (pod_dir / "ssh_host_ed25519_key").string();
  const Exec keygen = launcher.exec(0);
  EXPECT_EQ(keygen.argv, (std::vector<std::string>{"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key}));
  EXPECT_EQ(keygen.env, (EnvList{{"PATH", "/usr/bin:/bin"}}));

  const int port = ssh.port_for("w-0", "w-0.j.default.svc");
  EXPECT_EQ(launch.command,
            (std::vector<std::string>{"/usr/sbin/sshd", "-De",
                                      "-f", (dir / "config" / "sshd_config").string(),
                                      "-p", std::to_string(port),
                                      "-h", key,
                                      "-o", "ListenAddress=127.0.0.1",
                                      "-o", "UsePAM=no",
                                      "-o", "PidFile=none",
                                      "-o", "AuthorizedKeysFile=/root/.ssh/authorized_keys",
                                      "-o", "SetEnv=PATH=\"/opt/bin:/usr/bin\" RANK=\"1\""}));
}

TEST_F(SshModeTest, AFailingSshKeygenFailsTheWorkerWithItsOutput) {
  FakeProcessLauncher launcher([](const Exec&, const LineSink& sink) {
    sink("Saving key \"/x\" failed: Permission denied");
    return std::optional<int>(1);
  });
  SshMode ssh(dir / "config", dir, launcher, {{"PATH", "/usr/bin:/bin"}});
  LaunchSpec launch;
  launch.command = {"/usr/sbin/sshd", "-De"};
  try {
    ssh.adjust_worker("w-1", "w-1.j.default.svc", "/root/.ssh", dir / "w-1", launch);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "ssh-keygen failed for w-1 (exit code 1)\n  Saving key \"/x\" failed: Permission denied");
  }
  EXPECT_EQ(launch.command, (std::vector<std::string>{"/usr/sbin/sshd", "-De"}));  // unchanged
}

TEST_F(SshModeTest, LauncherSshConfigNamesEveryWorkerOnItsPort) {
  FakeProcessLauncher launcher;
  SshMode ssh(dir / "config", dir, launcher, {});
  LaunchSpec bwrap, rewrite;
  ssh.adjust_launcher(bwrap, Isolation::Bwrap, "/root/.ssh", {{"w-0", "w-0.j.default.svc"}});
  ASSERT_EQ(bwrap.mounts.size(), 1u);
  EXPECT_EQ(bwrap.mounts[0].mount_path, "/etc/ssh/ssh_config");
  std::ifstream in(bwrap.mounts[0].host_path);
  const std::string config((std::istreambuf_iterator<char>(in)), {});
  const int port = ssh.port_for("w-0", "w-0.j.default.svc");
  EXPECT_NE(config.find("Host w-0.j.default.svc w-0\n    HostName 127.0.0.1\n    Port " +
                        std::to_string(port) + "\n"),
            std::string::npos)
      << config;
  EXPECT_NE(config.find("StrictHostKeyChecking no"), std::string::npos);
  ssh.adjust_launcher(rewrite, Isolation::Rewrite, "/root/.ssh", {{"w-0", "w-0.j.default.svc"}});
  EXPECT_EQ(get_env(rewrite.env, "OMPI_MCA_plm_rsh_agent"),
            "ssh -F " + (dir / "ssh_config").string() + " -i /root/.ssh/id_rsa");
  EXPECT_EQ(launcher.started(), 0u);  // nothing to run for the launcher
}

}  // namespace
}  // namespace local
