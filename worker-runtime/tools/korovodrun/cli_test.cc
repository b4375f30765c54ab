#include "cli.h"

#include <gtest/gtest.h>

namespace korovod::launcher {
namespace {

using Words = std::vector<std::string>;

TEST(Cli, HorovodrunSpellingsAndTheCommandsOwnFlags) {
  const ParsedCommandLine p = parse_command_line(
      {"-np", "4", "-H", "a:2,b:2", "-p", "2222", "-i", "/k", "--verbose", "python", "train.py", "-np", "9", "--verbose"});
  ASSERT_FALSE(p.exit_code);
  EXPECT_EQ(p.options.num_proc, 4);
  EXPECT_EQ(p.options.hosts, "a:2,b:2");
  EXPECT_EQ(p.options.ssh_port, 2222);
  EXPECT_EQ(p.options.ssh_identity_file, "/k");
  EXPECT_TRUE(p.options.verbose);
  EXPECT_EQ(p.options.controller, Controller::kTcp);
  EXPECT_EQ(p.options.command, (Words{"python", "train.py", "-np", "9", "--verbose"}));
}

TEST(Cli, RshAgentFlag) {
  const ParsedCommandLine p =
      parse_command_line({"-np", "2", "-H", "a:1,b:1", "--rsh-agent", "korovod-agent rsh -p 2300", "prog"});
  ASSERT_FALSE(p.exit_code);
  EXPECT_EQ(p.options.rsh_agent, "korovod-agent rsh -p 2300");
  EXPECT_EQ(p.options.command, Words{"prog"});
  EXPECT_EQ(parse_command_line({"-np", "2", "prog"}).options.rsh_agent, "");
}

TEST(Cli, TuningFlags) {
  const ParsedCommandLine p = parse_command_line(
      {"--num-proc", "2", "-hostfile", "hf", "--start-timeout", "60", "--timeline-filename", "t.json",
       "--timeline-mark-cycles", "--autotune", "--autotune-log-file", "a.csv", "--cycle-time-ms", "3.5",
       "--fusion-threshold-mb", "0", "--network-interface", "eth0", "--network-interface", "eth1", "--mpi", "--", "prog"});
  ASSERT_FALSE(p.exit_code);
  const LaunchOptions& o = p.options;
  EXPECT_EQ(o.hostfile, "hf");
  EXPECT_EQ(o.start_timeout_seconds, 60);
  EXPECT_EQ(o.timeline_filename, "t.json");
  EXPECT_TRUE(o.timeline_mark_cycles);
  EXPECT_TRUE(o.autotune);
  EXPECT_EQ(o.autotune_log_file, "a.csv");
  EXPECT_EQ(o.cycle_time_ms, 3.5);
  EXPECT_EQ(o.fusion_threshold_mb, 0);
  EXPECT_EQ(o.network_interfaces, (Words{"eth0", "eth1"}));
  EXPECT_EQ(o.controller, Controller::kMpi);
  EXPECT_EQ(o.command, Words{"prog"});
}

TEST(Cli, InterfaceListAndGlooAlias) {
  const ParsedCommandLine p = parse_command_line({"-np", "1", "--network-interfaces", "eth0,eth1", "--gloo", "prog"});
  ASSERT_FALSE(p.exit_code);
  EXPECT_EQ(p.options.network_interfaces, (Words{"eth0", "eth1"}));
  EXPECT_EQ(p.options.controller, Controller::kTcp);
}

TEST(Cli, CheckBuildNeedsNothingElse) {
  const ParsedCommandLine p = parse_command_line({"-cb"});
  ASSERT_FALSE(p.exit_code);
  EXPECT_TRUE(p.options.check_build);
}

TEST(Cli, UsageErrorsExitTwo) {
  const std::vector<Words> bad = {
      {"prog"},                                          // no -np
      {"-np", "2"},                                      // no command
      {"-np", "0", "prog"},                              // -np below 1
      {"-np", "2", "--bogus", "prog"},                   // unknown flag
      {"-np", "2", "-H", "a:1", "--hostfile", "f", "prog"},  // both host sources
      {"-np", "2", "--mpi", "--tcp", "prog"},            // both controllers
      {"-np", "2", "--timeline-mark-cycles", "prog"},    // needs --timeline-filename
      {"-np", "2", "--autotune-log-file", "x", "prog"},  // needs --autotune
      {"-np", "2", "-p", "0", "prog"},                   // port out of range
  };
  for (const Words& args : bad) {
    const ParsedCommandLine p = parse_command_line(args);
    EXPECT_EQ(p.exit_code, 2) << ::testing::PrintToString(args);
  }
}

TEST(Cli, HelpExitsZero) { EXPECT_EQ(parse_command_line({"--help"}).exit_code, 0); }

}  // namespace
}  // namespace korovod::launcher
