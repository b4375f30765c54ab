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

}  // namespace
}  // namespace korovod::launcher
