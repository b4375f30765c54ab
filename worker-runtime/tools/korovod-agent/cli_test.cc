// korovod-agent's command line (cli.h) and what it reads from the environment (settings.h).
#include "cli.h"

#include <gtest/gtest.h>

#include <fstream>

#include "settings.h"

namespace korovod::agent {
namespace {

TEST(AgentCli, ServeDefaultsAndFlags) {
  AgentCommandLine line = parse_command_line({"serve"}, {});
  ASSERT_FALSE(line.exit_code);
  EXPECT_EQ(line.subcommand, Subcommand::kServe);
  EXPECT_EQ(line.serve.listen, "0.0.0.0");
  EXPECT_EQ(line.serve.port, 2223);
  EXPECT_EQ(line.serve.session.grace_seconds, 5);
  EXPECT_EQ(line.serve.session.handshake_timeout_seconds, 10);
  line = parse_command_line({"serve"}, {{"KOROVOD_AGENT_PORT", "2300"}});
  EXPECT_EQ(line.serve.port, 2300);
  line = parse_command_line({"serve", "--listen", "127.0.0.2", "--port", "2400", "--grace-seconds", "1",
                             "--handshake-timeout", "0.5"},
                            {{"KOROVOD_AGENT_PORT", "2300"}});
  ASSERT_FALSE(line.exit_code);
  EXPECT_EQ(line.serve.listen, "127.0.0.2");
  EXPECT_EQ(line.serve.port, 2400);  // the flag wins
  EXPECT_EQ(line.serve.session.grace_seconds, 1);
  EXPECT_EQ(line.serve.session.handshake_timeout_seconds, 0.5);
}

TEST(AgentCli, UsageErrors) {
  EXPECT_EQ(parse_command_line({}, {}).exit_code, 2);
  EXPECT_EQ(parse_command_line({"serve", "--port", "0"}, {}).exit_code, 2);
  EXPECT_EQ(parse_command_line({"serve"}, {{"KOROVOD_AGENT_PORT", "x"}}).exit_code, 2);
  EXPECT_EQ(parse_command_line({"serve", "--help"}, {}).exit_code, 0);
  EXPECT_EQ(parse_command_line({"rsh", "--help"}, {}).exit_code, 0);
  EXPECT_EQ(parse_command_line({"rsh", "h"}, {}).exit_code, 255);  // ssh's code for its own failures
  EXPECT_EQ(parse_command_line({"rsh", "h", "ls"}, {{"KOROVOD_AGENT_CONNECT_TIMEOUT", "-1"}}).exit_code, 255);
}

TEST(AgentCli, RshTakesSshArgumentsAndTheEnvironment) {
  AgentCommandLine line = parse_command_line({"rsh", "-x", "-o", "ConnectionAttempts=10", "node-1", "hostname", "-f"},
                                             {{"KOROVOD_AGENT_PORT", "2300"}, {"KOROVOD_AGENT_CONNECT_TIMEOUT", "5"}});
  ASSERT_FALSE(line.exit_code);
  EXPECT_EQ(line.subcommand, Subcommand::kRsh);
  EXPECT_EQ(line.rsh.host, "node-1");
  EXPECT_EQ(line.rsh.port, 2300);
  EXPECT_EQ(line.rsh.command, "hostname -f");
  EXPECT_EQ(line.rsh_options.connect_timeout_seconds, 5);
  // --help after the host belongs to the command.
  line = parse_command_line({"rsh", "-p", "2400", "node-1", "ls", "--help"}, {});
  ASSERT_FALSE(line.exit_code);
  EXPECT_EQ(line.rsh.port, 2400);
  EXPECT_EQ(line.rsh.command, "ls --help");
  EXPECT_EQ(parse_command_line({"rsh", "node-1", "ls"}, {}).rsh_options.connect_timeout_seconds, 60);
}

TEST(AgentSettings, JobSecretErrorsNameTheVariableNotTheValue) {
  Result<tcp::JobSecret> missing = job_secret_from({});
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("KOROVOD_JOB_SECRET is not set"), std::string::npos);
  Result<tcp::JobSecret> short_one = job_secret_from({{"KOROVOD_JOB_SECRET", "tooshort"}});
  ASSERT_FALSE(short_one.is_ok());
  EXPECT_NE(short_one.status().message().find("KOROVOD_JOB_SECRET"), std::string::npos);
  EXPECT_EQ(short_one.status().message().find("tooshort"), std::string::npos);
  EXPECT_TRUE(job_secret_from({{"KOROVOD_JOB_SECRET", std::string(64, 'a')}}).is_ok());
}

// In an MPIJob's pods the secret is a file (KOROVOD_JOB_SECRET_FILE); KOROVOD_JOB_SECRET wins.
TEST(AgentSettings, JobSecretFromTheFileTheOperatorMounts) {
  const std::string path = ::testing::TempDir() + "/korovod-agent-secret";
  std::ofstream(path) << std::string(64, 'b') << "\n";
  Result<tcp::JobSecret> from_file = job_secret_from({{"KOROVOD_JOB_SECRET_FILE", path}});
  ASSERT_TRUE(from_file.is_ok()) << from_file.status().to_string();
  EXPECT_EQ(from_file->text(), std::string(64, 'b'));
  Result<tcp::JobSecret> both =
      job_secret_from({{"KOROVOD_JOB_SECRET_FILE", path}, {"KOROVOD_JOB_SECRET", std::string(64, 'c')}});
  ASSERT_TRUE(both.is_ok());
  EXPECT_EQ(both->text(), std::string(64, 'c'));
  Result<tcp::JobSecret> missing = job_secret_from({{"KOROVOD_JOB_SECRET_FILE", path + ".absent"}});
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("KOROVOD_JOB_SECRET_FILE=" + path + ".absent: cannot read it"),
            std::string::npos);
}

}  // namespace
}  // namespace korovod::agent
