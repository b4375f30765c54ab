// The supervisor on real processes (sh -c scripts): exit codes, prefixed output, ending the job.
#include "supervisor.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <sstream>
#include <thread>

#include "job_signals.h"
#include "process_probe.h"
#include "testing/recording_sink.h"

namespace korovod::launcher {
namespace {

using testing::processes_with;
using testing::RecordingSink;
using testing::unique_marker;
using Clock = std::chrono::steady_clock;

RankLaunch shell_rank(int rank, const std::string& script) {
  RankLaunch r;
  r.rank = rank;
  r.host = "localhost";
  r.process.argv = {"sh", "-c", script};
  r.process.env = {{"PATH", "/usr/bin:/bin"}, {"R", std::to_string(rank)}};
  return r;
}

SupervisorOptions quick() {
  SupervisorOptions o;
  o.grace = std::chrono::milliseconds(400);
  o.drain = std::chrono::milliseconds(300);
  return o;
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

TEST(Supervisor, AllRanksSucceedWithPrefixedOutput) {
  const JobSignalBlock block;
  RecordingSink sink;
  const int code = supervise({shell_rank(0, "echo hello $R; echo oops $R >&2"), shell_rank(1, "echo hello $R")}, sink, quick());
  EXPECT_EQ(code, 0);
  EXPECT_NE(sink.out().find("[0]<stdout>:hello 0\n"), std::string::npos) << sink.out();
  EXPECT_NE(sink.out().find("[1]<stdout>:hello 1\n"), std::string::npos) << sink.out();
  EXPECT_EQ(sink.err(), "[0]<stderr>:oops 0\n");
}

TEST(Supervisor, LinesOfManyRanksNeverMix) {
  const JobSignalBlock block;
  RecordingSink sink;
  const std::string script = "i=0; while [ $i -lt 3000 ]; do echo \"line-$R-$i-abcdefghijklmnopqrstuvwxyz\"; i=$((i+1)); done";
  ASSERT_EQ(supervise({shell_rank(0, script), shell_rank(1, script), shell_rank(2, script)}, sink, quick()), 0);
  std::istringstream lines(sink.out());
  int count = 0;
  for (std::string line; std::getline(lines, line); ++count) {
    // "[r]<stdout>:line-r-<i>-abc...z": the prefix's rank and the line's own must agree.
    int prefix_rank = -1, line_rank = -2, index = -1, end = 0;
    const int fields = std::sscanf(line.c_str(), "[%d]<stdout>:line-%d-%d-abcdefghijklmnopqrstuvwxyz%n", &prefix_rank,
                                   &line_rank, &index, &end);
    ASSERT_EQ(fields, 3) << "mixed line: " << line;
    ASSERT_EQ(static_cast<size_t>(end), line.size()) << "mixed line: " << line;
    ASSERT_EQ(prefix_rank, line_rank) << line;
  }
  EXPECT_EQ(count, 9000);
}

TEST(Supervisor, FirstFailureEndsTheOtherRanks) {
  const JobSignalBlock block;
  RecordingSink sink;
  const std::string marker = unique_marker();
  const auto start = Clock::now();
  const int code = supervise({shell_rank(0, "trap 'echo got-sigterm; exit 0' TERM; sleep 30 & wait; : " + marker),
                              shell_rank(1, "sleep 0.2; exit 3"), shell_rank(2, "sleep 30; : " + marker)},
                             sink, quick());
  EXPECT_EQ(code, 3);
  EXPECT_LT(seconds_since(start), 5.0);
  EXPECT_NE(sink.out().find("[0]<stdout>:got-sigterm\n"), std::string::npos) << "SIGTERM first: " << sink.out();
  EXPECT_NE(sink.err().find("korovodrun: rank 1 on localhost exited with code 3: ending the other ranks"),
            std::string::npos)
      << sink.err();
  EXPECT_TRUE(processes_with(marker).empty());
}

TEST(Supervisor, RankIgnoringSigtermIsKilledAfterTheGracePeriod) {
  const JobSignalBlock block;
  RecordingSink sink;
  const std::string marker = unique_marker();
  const auto start = Clock::now();
  const int code = supervise({shell_rank(0, "trap '' TERM; echo ready; while :; do sleep 0.05; done; : " + marker),
                              shell_rank(1, "sleep 0.3; exit 5")},
                             sink, quick());
  const double took = seconds_since(start);
  EXPECT_EQ(code, 5);
  EXPECT_GE(took, 0.3 + 0.4) << "SIGKILL only after the grace period";
  EXPECT_LT(took, 4.0);
  EXPECT_TRUE(processes_with(marker).empty());
}

TEST(Supervisor, KilledRankGives128PlusSignal) {
  const JobSignalBlock block;
  RecordingSink sink;
  EXPECT_EQ(supervise({shell_rank(0, "kill -KILL $$")}, sink, quick()), 137);
}

TEST(Supervisor, LaterFailuresDoNotChangeTheExitCode) {
  const JobSignalBlock block;
  RecordingSink sink;
  // Rank 1 fails first; rank 0 then dies of the SIGTERM (143), which is not the job's code.
  EXPECT_EQ(supervise({shell_rank(0, "sleep 30"), shell_rank(1, "exit 7")}, sink, quick()), 7);
}

TEST(Supervisor, SigintEndsEveryRankWith130) {
  const JobSignalBlock block;
  RecordingSink sink;
  const std::string marker = unique_marker();
  std::thread interrupter([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    kill(getpid(), SIGINT);
  });
  const int code = supervise({shell_rank(0, "sleep 30; : " + marker), shell_rank(1, "sleep 30; : " + marker)}, sink, quick());
  interrupter.join();
  EXPECT_EQ(code, 130);
  EXPECT_NE(sink.err().find("korovodrun: got SIGINT: ending every rank"), std::string::npos) << sink.err();
  EXPECT_TRUE(processes_with(marker).empty());
}

TEST(Supervisor, SignalWhileEndingKillsAtOnceAndKeepsTheFailureCode) {
  const JobSignalBlock block;
  RecordingSink sink;
  const std::string marker = unique_marker();
  SupervisorOptions slow_grace = quick();
  slow_grace.grace = std::chrono::seconds(20);
  std::thread interrupter([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    kill(getpid(), SIGTERM);
  });
  const auto start = Clock::now();
  const int code = supervise(
      {shell_rank(0, "trap '' TERM; while :; do sleep 0.05; done; : " + marker), shell_rank(1, "sleep 0.2; exit 6")}, sink,
      slow_grace);
  interrupter.join();
  EXPECT_EQ(code, 6);
  EXPECT_LT(seconds_since(start), 5.0) << "the signal must not wait for the 20 s grace period";
  EXPECT_NE(sink.err().find("korovodrun: got SIGTERM while ending the job: killing every rank now"), std::string::npos)
      << sink.err();
  EXPECT_TRUE(processes_with(marker).empty());
}

TEST(Supervisor, WhatARankLeavesInItsGroupGoesWithIt) {
  const JobSignalBlock block;
  RecordingSink sink;
  const std::string marker = unique_marker();
  EXPECT_EQ(supervise({shell_rank(0, "sh -c 'sleep 30; : " + marker + "' & echo started")}, sink, quick()), 0);
  EXPECT_NE(sink.out().find("[0]<stdout>:started"), std::string::npos);
  EXPECT_TRUE(processes_with(marker).empty());
}

TEST(Supervisor, CommandNotFoundGives127AndEndsTheJob) {
  const JobSignalBlock block;
  RecordingSink sink;
  const std::string marker = unique_marker();
  RankLaunch missing = shell_rank(1, "");
  missing.process.argv = {"no-such-command-korovodrun"};
  const int code = supervise({shell_rank(0, "sleep 30; : " + marker), missing}, sink, quick());
  EXPECT_EQ(code, 127);
  EXPECT_NE(sink.err().find("no-such-command-korovodrun"), std::string::npos) << sink.err();
  EXPECT_TRUE(processes_with(marker).empty());
}

TEST(Supervisor, UnfinishedLastLineIsWrittenWithANewline) {
  const JobSignalBlock block;
  RecordingSink sink;
  EXPECT_EQ(supervise({shell_rank(0, "printf 'no newline'")}, sink, quick()), 0);
  EXPECT_EQ(sink.out(), "[0]<stdout>:no newline\n");
}

}  // namespace
}  // namespace korovod::launcher
