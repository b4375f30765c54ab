#include "rank_env.h"

#include <gtest/gtest.h>

#include "tcp_launch.h"

namespace korovod::launcher {
namespace {

TEST(RankEnv, NoFlagsSetNothing) { EXPECT_TRUE(tuning_env(LaunchOptions{}).empty()); }

TEST(RankEnv, TuningFlagsBecomeBothNames) {
  LaunchOptions o;
  o.fusion_threshold_mb = 32;
  o.cycle_time_ms = 2.5;
  o.timeline_filename = "/tmp/t.json";
  o.timeline_mark_cycles = true;
  o.autotune = true;
  o.autotune_log_file = "/tmp/a.csv";
  o.start_timeout_seconds = 90;
  o.verbose = true;
  const EnvMap env = tuning_env(o);
  for (const char* prefix : {"HOROVOD_", "KOROVOD_"}) {
    const std::string p = prefix;
    EXPECT_EQ(env.at(p + "FUSION_THRESHOLD"), "33554432");
    EXPECT_EQ(env.at(p + "CYCLE_TIME"), "2.5");
    EXPECT_EQ(env.at(p + "TIMELINE"), "/tmp/t.json");
    EXPECT_EQ(env.at(p + "TIMELINE_MARK_CYCLES"), "1");
    EXPECT_EQ(env.at(p + "AUTOTUNE"), "1");
    EXPECT_EQ(env.at(p + "AUTOTUNE_LOG"), "/tmp/a.csv");
    EXPECT_EQ(env.at(p + "START_TIMEOUT"), "90");
    EXPECT_EQ(env.at(p + "LOG_LEVEL"), "DEBUG");
  }
}

TEST(RankEnv, ZeroFusionThresholdDisablesFusion) {
  LaunchOptions o;
  o.fusion_threshold_mb = 0;
  EXPECT_EQ(tuning_env(o).at("HOROVOD_FUSION_THRESHOLD"), "0");
}

TEST(RankEnv, NetworkInterfaceNamesTheRuntimeAndNcclInterface) {
  LaunchOptions o;
  o.network_interfaces = {"eth1", "eth2"};
  const EnvMap env = tuning_env(o);
  EXPECT_EQ(env.at("KOROVOD_IFACE"), "eth1");
  EXPECT_EQ(env.at("HOROVOD_GLOO_IFACE"), "eth1");
  EXPECT_EQ(env.at("NCCL_SOCKET_IFNAME"), "eth1,eth2");
}

TEST(RankEnv, SlotEnvCarriesWorldStoreAndHorovodNames) {
  SlotAssignment s{"node-b", 5, 8, 1, 4, 1, 2};
  const EnvMap env = slot_env(s, {"10.1.2.3", 40123});
  EXPECT_EQ(env.at("KOROVOD_RANK"), "5");
  EXPECT_EQ(env.at("KOROVOD_SIZE"), "8");
  EXPECT_EQ(env.at("KOROVOD_HOST_ID"), "node-b");
  EXPECT_EQ(env.at("KOROVOD_RENDEZVOUS_ADDR"), "10.1.2.3");
  EXPECT_EQ(env.at("KOROVOD_RENDEZVOUS_PORT"), "40123");
  EXPECT_EQ(env.at("KOROVOD_RENDEZVOUS_SERVER"), "external");
  EXPECT_EQ(env.at("HOROVOD_HOSTNAME"), "node-b");
  EXPECT_EQ(env.at("HOROVOD_RANK"), "5");
  EXPECT_EQ(env.at("HOROVOD_SIZE"), "8");
  EXPECT_EQ(env.at("HOROVOD_LOCAL_RANK"), "1");
  EXPECT_EQ(env.at("HOROVOD_LOCAL_SIZE"), "4");
  EXPECT_EQ(env.at("HOROVOD_CROSS_RANK"), "1");
  EXPECT_EQ(env.at("HOROVOD_CROSS_SIZE"), "2");
}

TEST(RankEnv, ExportableFollowsHorovodrun) {
  EXPECT_TRUE(is_exportable("PATH"));
  EXPECT_TRUE(is_exportable("HOROVOD_RANK"));
  EXPECT_FALSE(is_exportable("OLDPWD"));
  EXPECT_FALSE(is_exportable("CUDA_VISIBLE_DEVICES"));
  EXPECT_FALSE(is_exportable("MY_CUDA_VISIBLE_DEVICES"));
  EXPECT_FALSE(is_exportable("HOROVOD_SECRET_KEY"));
  EXPECT_FALSE(is_exportable("BASH_FUNC_f%%"));
  EXPECT_FALSE(is_exportable("1X"));
}

TEST(RankEnv, ShellQuoteSurvivesTheShell) {
  EXPECT_EQ(shell_quote("plain-word_1.0/x:y=z"), "plain-word_1.0/x:y=z");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's $HOME"), "'it'\"'\"'s $HOME'");
}

TEST(RankEnv, PlanRunsLocalSlotsDirectlyAndRemoteSlotsOverSsh) {
  LaunchOptions o;
  o.num_proc = 3;
  o.command = {"python3", "train.py", "--lr", "0.1"};
  o.ssh_port = 2222;
  o.ssh_identity_file = "/keys/id";
  o.fusion_threshold_mb = 1;
  auto slots = assign_slots({{"localhost", 2}, {"node-b", 1}}, 3);
  ASSERT_TRUE(slots.is_ok());
  RankPlanInputs in;
  in.caller_env = {{"PATH", "/usr/bin"}, {"KOROVOD_FUSION_THRESHOLD", "7"}, {"OLDPWD", "/x"}};
  in.cwd = "/work dir";
  in.remote_hosts = {"node-b"};
  in.rendezvous = {"10.0.0.1", 5000};
  const std::vector<RankLaunch> ranks = plan_ranks(o, *slots, in);
  ASSERT_EQ(ranks.size(), 3u);

  EXPECT_FALSE(ranks[1].remote);
  EXPECT_EQ(ranks[1].process.argv, o.command);
  EXPECT_FALSE(ranks[1].process.stdin_pipe);
  EXPECT_EQ(ranks[1].process.env.at("PATH"), "/usr/bin");
  EXPECT_EQ(ranks[1].process.env.at("KOROVOD_FUSION_THRESHOLD"), "1048576") << "the flag wins over the caller's";
  EXPECT_EQ(ranks[1].process.env.at("HOROVOD_LOCAL_RANK"), "1");
  EXPECT_EQ(ranks[1].process.env.at("KOROVOD_RENDEZVOUS_ADDR"), "10.0.0.1");

  const RankLaunch& remote = ranks[2];
  EXPECT_TRUE(remote.remote);
  EXPECT_TRUE(remote.process.stdin_pipe);
  EXPECT_EQ(remote.host, "node-b");
  EXPECT_EQ(remote.process.env, in.caller_env) << "ssh itself runs in the caller's environment";
  const std::vector<std::string> head(remote.process.argv.begin(), remote.process.argv.end() - 1);
  EXPECT_EQ(head, (std::vector<std::string>{"ssh", "-o", "PasswordAuthentication=no", "-o", "StrictHostKeyChecking=no",
                                            "-o", "BatchMode=yes", "-p", "2222", "-i", "/keys/id", "node-b"}));
  const std::string& script = remote.process.argv.back();
  EXPECT_NE(script.find("cd '/work dir'"), std::string::npos) << script;
  EXPECT_NE(script.find(" HOROVOD_RANK=2 "), std::string::npos) << script;
  EXPECT_NE(script.find(" KOROVOD_FUSION_THRESHOLD=1048576 "), std::string::npos) << script;
  EXPECT_NE(script.find(" PATH=/usr/bin "), std::string::npos) << script;
  EXPECT_EQ(script.find("OLDPWD"), std::string::npos) << script;
  EXPECT_NE(script.find(" python3 train.py --lr 0.1 "), std::string::npos) << script;
}

TEST(RankEnv, JobSecretGoesToLocalRanksEnvAndRemoteRanksStdinNeverACommandLine) {
  LaunchOptions o;
  o.num_proc = 2;
  o.command = {"train"};
  auto slots = assign_slots({{"localhost", 1}, {"node-b", 1}}, 2);
  ASSERT_TRUE(slots.is_ok());
  RankPlanInputs in;
  in.caller_env = {{"PATH", "/usr/bin"}, {"KOROVOD_JOB_SECRET", "the-caller's-own"}};
  in.remote_hosts = {"node-b"};
  in.job_secret = "0123456789abcdef0123456789abcdef";
  const std::vector<RankLaunch> ranks = plan_ranks(o, *slots, in);
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks[0].process.env.at("KOROVOD_JOB_SECRET"), in.job_secret) << "this run's secret wins";
  EXPECT_TRUE(ranks[0].process.stdin_data.empty());
  for (const std::string& arg : ranks[0].process.argv) EXPECT_EQ(arg.find(in.job_secret), std::string::npos);
  const RankLaunch& remote = ranks[1];
  EXPECT_EQ(remote.process.stdin_data, in.job_secret + "\n");
  for (const std::string& arg : remote.process.argv) {
    EXPECT_EQ(arg.find(in.job_secret), std::string::npos) << arg;
    EXPECT_EQ(arg.find("KOROVOD_JOB_SECRET="), std::string::npos) << arg;
  }
  EXPECT_NE(remote.process.argv.back().find("read -r KOROVOD_JOB_SECRET"), std::string::npos);
  EXPECT_FALSE(is_exportable("KOROVOD_JOB_SECRET"));
  EXPECT_TRUE(is_exportable("KOROVOD_JOB_SECRET_FILE")) << "a path is no secret";
}

}  // namespace
}  // namespace korovod::launcher
