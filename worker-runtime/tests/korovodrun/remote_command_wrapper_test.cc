// The remote wrapper run by a local sh (what the remote login shell would run): environment, exit
// code, and ending the rank when its stdin closes. The ssh command line: tools/korovodrun/
// remote_command_test.cc.
#include "remote_command.h"

#include <gtest/gtest.h>

#include <chrono>

#include "job_signals.h"
#include "process_probe.h"
#include "testing/recording_sink.h"
#include "supervisor.h"

namespace korovod::launcher {
namespace {

using testing::processes_with;
using testing::RecordingSink;
using testing::unique_marker;

RankLaunch wrapped_rank(int rank, const std::vector<std::string>& command, const EnvMap& env, int grace_seconds = 1) {
  RankLaunch r;
  r.rank = rank;
  r.host = "wrapped";
  r.remote = true;
  r.process.argv = {"sh", "-c", remote_rank_script(command, env, "/tmp", grace_seconds)};
  r.process.env = {{"PATH", "/usr/bin:/bin"}};
  r.process.stdin_pipe = true;
  return r;
}

RankLaunch plain_rank(int rank, const std::string& script) {
  RankLaunch r;
  r.rank = rank;
  r.host = "localhost";
  r.process.argv = {"sh", "-c", script};
  r.process.env = {{"PATH", "/usr/bin:/bin"}};
  return r;
}

SupervisorOptions quick() {
  SupervisorOptions o;
  o.grace = std::chrono::milliseconds(500);
  o.drain = std::chrono::milliseconds(300);
  return o;
}

TEST(RemoteCommand, WrapperRunsInTheDirectoryWithTheEnvironmentAndExitCode) {
  const JobSignalBlock block;
  RecordingSink sink;
  const EnvMap env = {{"PATH", "/usr/bin:/bin"}, {"ODD", "it's a \"value\" with $dollar"}, {"OLDPWD", "/nope"}};
  const int code = supervise(
      {wrapped_rank(0, {"sh", "-c", "echo \"$ODD\"; pwd; echo \"old=${OLDPWD-unset}\"; echo err >&2; exit 4"}, env)}, sink,
      quick());
  EXPECT_EQ(code, 4);
  EXPECT_NE(sink.out().find("[0]<stdout>:it's a \"value\" with $dollar\n"), std::string::npos) << sink.out();
  EXPECT_NE(sink.out().find("[0]<stdout>:/tmp\n"), std::string::npos) << sink.out();
  EXPECT_EQ(sink.out().find("old=/nope"), std::string::npos) << "OLDPWD does not travel: " << sink.out();
  EXPECT_NE(sink.err().find("[0]<stderr>:err\n"), std::string::npos) << sink.err();
}

TEST(RemoteCommand, WrapperReadsTheSecretFromStdinIntoTheRanksEnvironment) {
  const JobSignalBlock block;
  RecordingSink sink;
  RankLaunch r;
  r.rank = 0;
  r.host = "wrapped";
  r.remote = true;
  r.process.argv = {"sh", "-c",
                    remote_rank_script({"sh", "-c", "echo \"secret=$KOROVOD_JOB_SECRET\"; ps -o args= -p $$"},
                                       {{"PATH", "/usr/bin:/bin"}}, "/tmp", 1, /*secret_on_stdin=*/true)};
  r.process.env = {{"PATH", "/usr/bin:/bin"}};
  r.process.stdin_pipe = true;
  r.process.stdin_data = "s3cr3t-0123456789abcdef\n";
  EXPECT_EQ(supervise({r}, sink, quick()), 0) << sink.err();
  EXPECT_NE(sink.out().find("[0]<stdout>:secret=s3cr3t-0123456789abcdef\n"), std::string::npos) << sink.out();
  EXPECT_EQ(r.process.argv.back().find("s3cr3t"), std::string::npos);
  const std::string& out = sink.out();
  EXPECT_EQ(out.find("s3cr3t"), out.rfind("s3cr3t")) << "only the echo shows it, not the rank's ps line: " << out;
  // Stdin ends before a line came (korovodrun gone or ending the job): the rank never starts.
  RecordingSink none;
  r.process.stdin_data.clear();
  r.process.argv.back() = remote_rank_script({"sh", "-c", "echo started"}, {}, "/tmp", 1, true);
  EXPECT_EQ(supervise({r, plain_rank(1, "sleep 0.3; exit 3")}, none, quick()), 3);
  EXPECT_EQ(none.out().find("started"), std::string::npos) << none.out();
  EXPECT_NE(none.err().find("[0]<stderr>:korovodrun: no job secret on stdin"), std::string::npos) << none.err();
}

TEST(RemoteCommand, ClosingStdinEndsTheWrappedRank) {
  const JobSignalBlock block;
  RecordingSink sink;
  const std::string marker = unique_marker();
  const auto start = std::chrono::steady_clock::now();
  const int code = supervise({wrapped_rank(0, {"sh", "-c", "sleep 30; : " + marker}, {{"PATH", "/usr/bin:/bin"}}),
                              plain_rank(1, "sleep 0.5; exit 3")},
                             sink, quick());
  EXPECT_EQ(code, 3);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 4.0);
  EXPECT_TRUE(processes_with(marker).empty());
}

TEST(RemoteCommand, WrappedRankIgnoringSigtermIsKilledByTheWrapper) {
  const JobSignalBlock block;
  RecordingSink sink;
  const std::string marker = unique_marker();
  const int code = supervise(
      {wrapped_rank(0, {"sh", "-c", "trap '' TERM; while :; do sleep 0.05; done; : " + marker}, {{"PATH", "/usr/bin:/bin"}}),
       plain_rank(1, "sleep 0.5; exit 3")},
      sink, quick());
  EXPECT_EQ(code, 3);
  EXPECT_TRUE(processes_with(marker).empty());
}

}  // namespace
}  // namespace korovod::launcher
