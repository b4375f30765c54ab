// os::ProcessGroup on real short processes (sh, sleep): reaping with what is left in the group,
// ending with a grace period asked by SIGTERM or by closing stdin, and nothing left behind.
#include "os/process_group.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

namespace korovod::os {
namespace {

using namespace std::chrono_literals;

ProcessGroup start(const std::string& script, bool stdin_pipe = false) {
  Result<ExecArrays> exec = ExecArrays::resolve({"sh", "-c", script}, {{"PATH", "/usr/bin:/bin"}});
  EXPECT_TRUE(exec.is_ok());
  SpawnOptions options;
  options.stdin_pipe = stdin_pipe;
  Result<Child> child = spawn(*exec, options);
  EXPECT_TRUE(child.is_ok()) << child.status().message();
  return ProcessGroup(std::move(child).value());
}

// The first line of its stdout (a pid the script printed).
std::string first_line(ProcessGroup& group) {
  std::string line;
  char c;
  while (read(group.out().get(), &c, 1) == 1 && c != '\n') line += c;
  return line;
}

bool gone(pid_t pid) { return kill(pid, 0) != 0 && errno == ESRCH; }

// A process it left behind is re-parented (to init or a subreaper) once killed: gone, or a zombie
// until that parent reaps it.
bool dead(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  return !std::getline(stat, line) || line.substr(line.rfind(')') + 2, 1) == "Z";
}

bool dead_within(pid_t pid, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!dead(pid) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
  return dead(pid);
}

TEST(ProcessGroup, PollReapsOnceEndedAndKillsWhatItLeftInItsGroup) {
  ProcessGroup group = start("sleep 300 & echo $!; exit 3");
  const pid_t left = std::stoi(first_line(group));
  // Exits after printing: wait for that without blocking in poll().
  std::optional<int> code;
  for (int i = 0; i < 500 && !(code = group.poll()); ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(code, std::optional<int>(3));
  EXPECT_FALSE(group.running());
  EXPECT_EQ(group.poll(), std::optional<int>(3));  // kept
  EXPECT_TRUE(dead_within(left, 5s)) << "the sleep it started in its group still runs";
}

TEST(ProcessGroup, EndAsksWithSigtermAndKillsOnlyOnceTheGraceHasPassed) {
  ProcessGroup group = start("trap '' TERM; echo ready; while :; do sleep 0.05; done");
  ASSERT_EQ(first_line(group), "ready");
  const auto t0 = std::chrono::steady_clock::now();
  group.end(t0, 5000ms);
  EXPECT_TRUE(group.ending());
  EXPECT_EQ(group.kill_deadline(), std::optional(t0 + 5000ms));
  EXPECT_FALSE(group.kill_if_due(t0 + 4999ms));
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(group.poll(), std::nullopt) << "it ignores SIGTERM, so it still runs";
  group.end(t0 + 4999ms, 1ms);  // already ending: the deadline stays
  EXPECT_EQ(group.kill_deadline(), std::optional(t0 + 5000ms));
  EXPECT_TRUE(group.kill_if_due(t0 + 5000ms));
  EXPECT_EQ(group.kill_deadline(), std::nullopt);  // sent
  EXPECT_EQ(group.wait(), 128 + SIGKILL);
}

TEST(ProcessGroup, AProgramThatHonoursSigtermEndsWithinTheGrace) {
  ProcessGroup group = start("echo ready; exec sleep 300");
  ASSERT_EQ(first_line(group), "ready");
  group.end(std::chrono::steady_clock::now(), 60000ms);
  EXPECT_EQ(group.wait(), 128 + SIGTERM);
  EXPECT_EQ(group.kill_deadline(), std::nullopt);
}

TEST(ProcessGroup, EndByClosingStdinSendsNoSignal) {
  // As an ssh-run rank's remote wrapper does: end of file on stdin means end.
  ProcessGroup group = start("trap 'exit 99' TERM; echo ready; read line; exit 5", /*stdin_pipe=*/true);
  ASSERT_EQ(first_line(group), "ready");
  group.end(std::chrono::steady_clock::now(), 60000ms, ProcessGroup::Ask::kCloseStdin);
  EXPECT_FALSE(group.in().valid());
  EXPECT_EQ(group.wait(), 5);
}

TEST(ProcessGroup, KillSoonIsDueAtOnceEvenWhileEnding) {
  ProcessGroup group = start("trap '' TERM; echo ready; while :; do sleep 0.05; done");
  ASSERT_EQ(first_line(group), "ready");
  const auto t0 = std::chrono::steady_clock::now();
  group.end(t0, 60000ms);
  group.kill_soon(t0);
  EXPECT_TRUE(group.kill_if_due(t0));
  EXPECT_EQ(group.wait(), 128 + SIGKILL);
}

TEST(ProcessGroup, DestroyingOneThatRunsKillsAndReapsItsWholeGroup) {
  pid_t leader = -1, left = -1;
  {
    ProcessGroup group = start("sleep 300 & echo $!; exec sleep 300");
    left = std::stoi(first_line(group));
    leader = group.pid();
    ProcessGroup moved = std::move(group);  // the moved-from one owns nothing
    EXPECT_EQ(group.pid(), -1);
    EXPECT_FALSE(group.running());
    EXPECT_TRUE(moved.running());
  }
  EXPECT_TRUE(gone(leader)) << "the destructor reaps the program it started";
  EXPECT_TRUE(dead_within(left, 5s)) << "what it started in its group";
}

TEST(ProcessGroup, NothingIsSentOnceItHasEnded) {
  ProcessGroup group = start("exit 0");
  EXPECT_EQ(group.wait(), 0);
  const auto now = std::chrono::steady_clock::now();
  group.end(now, 0ms);
  group.kill_soon(now);
  EXPECT_FALSE(group.ending());
  EXPECT_FALSE(group.kill_if_due(now));
  EXPECT_EQ(group.kill_deadline(), std::nullopt);
}

}  // namespace
}  // namespace korovod::os
