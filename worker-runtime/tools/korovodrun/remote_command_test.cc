// The ssh command line korovodrun runs a remote rank with. The remote wrapper on real processes:
// tests/korovodrun/remote_command_wrapper_test.cc.
#include "remote_command.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace korovod::launcher {
namespace {

TEST(RemoteCommand, SshFlags) {
  SshOptions o;
  EXPECT_EQ(ssh_command("node-b", o, "script"),
            (std::vector<std::string>{"ssh", "-o", "PasswordAuthentication=no", "-o", "StrictHostKeyChecking=no", "-o",
                                      "BatchMode=yes", "node-b", "script"}));
  o.port = 2022;
  o.identity_file = "/k";
  o.connect_timeout = 30;
  EXPECT_EQ(ssh_command("node-b", o, "script"),
            (std::vector<std::string>{"ssh", "-o", "PasswordAuthentication=no", "-o", "StrictHostKeyChecking=no", "-o",
                                      "BatchMode=yes", "-o", "ConnectTimeout=30", "-p", "2022", "-i", "/k", "node-b",
                                      "script"}));
}

TEST(RemoteCommand, RshAgentReplacesSshWithItsWordsAndThePort) {
  SshOptions o;
  o.agent = {"/opt/korovod-agent", "rsh"};
  EXPECT_EQ(ssh_command("node-b", o, "script"), (std::vector<std::string>{"/opt/korovod-agent", "rsh", "node-b", "script"}));
  o.port = 2300;
  o.identity_file = "/k";     // an ssh key means nothing to the agent
  o.connect_timeout = 30;     // nor ssh's ConnectTimeout: the agent has its own
  EXPECT_EQ(ssh_command("node-b", o, "script"),
            (std::vector<std::string>{"/opt/korovod-agent", "rsh", "-p", "2300", "node-b", "script"}));
}

TEST(RemoteCommand, RshAgentFromTheFlagElseTheEnvironment) {
  LaunchOptions options;
  options.ssh_port = 2022;
  EXPECT_TRUE(ssh_options_for(options, {}).agent.empty());
  const EnvMap env{{"KOROVOD_RSH_AGENT", "  korovod-agent   rsh -p 2400 "}};
  EXPECT_EQ(ssh_options_for(options, env).agent, (std::vector<std::string>{"korovod-agent", "rsh", "-p", "2400"}));
  options.rsh_agent = "/b/korovod-agent rsh";
  const SshOptions ssh = ssh_options_for(options, env);
  EXPECT_EQ(ssh.agent, (std::vector<std::string>{"/b/korovod-agent", "rsh"}));  // the flag wins
  EXPECT_EQ(ssh.port, 2022);
}

}  // namespace
}  // namespace korovod::launcher
