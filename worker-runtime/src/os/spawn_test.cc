// os/: starting programs on real (short) processes, and the descriptor and path helpers.
#include "os/spawn.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "os/children.h"

namespace korovod::os {
namespace {

namespace fs = std::filesystem;

const EnvPairs kPath = {{"PATH", "/usr/bin:/bin"}};

std::vector<std::string> strings_of(char* const* array) {
  std::vector<std::string> out;
  for (; *array != nullptr; ++array) out.emplace_back(*array);
  return out;
}

std::string read_all(const Fd& fd) {
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(fd.get(), buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  return text;
}

// A folder holding one executable file, `name`, removed at the end of the test.
class BinDir {
 public:
  explicit BinDir(const std::string& name)
      : dir_(fs::temp_directory_path() / ("korovod-os-test-" + std::to_string(getpid()))) {
    fs::create_directories(dir_);
    std::ofstream(dir_ / name) << "#!/bin/sh\n";
    fs::permissions(dir_ / name, fs::perms::owner_all);
  }
  ~BinDir() { fs::remove_all(dir_); }
  std::string path() const { return dir_.string(); }

 private:
  fs::path dir_;
};

TEST(ExecArrays, ResolvesArgv0AgainstTheEnvsPathAndNullTerminatesBothArrays) {
  BinDir bin("trainer");
  Result<ExecArrays> r = ExecArrays::resolve({"trainer", "--epochs", "3"},
                                             {{"PATH", "/nonexistent:" + bin.path()}, {"RANK", "1"}, {"EMPTY", ""}});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  const ExecArrays moved = std::move(*r);  // the pointers stay valid across a move
  EXPECT_EQ(moved.program(), bin.path() + "/trainer");
  EXPECT_EQ(strings_of(moved.argv()), (std::vector<std::string>{"trainer", "--epochs", "3"}));
  EXPECT_EQ(strings_of(moved.envp()),
            (std::vector<std::string>{"PATH=/nonexistent:" + bin.path(), "RANK=1", "EMPTY="}));
}

TEST(ExecArrays, ANameWithASlashIsTakenAsGivenAndAnEmptyEnvGivesAnEmptyEnvp) {
  Result<ExecArrays> r = ExecArrays::resolve({"./run.sh"}, {});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->program(), "./run.sh");
  EXPECT_TRUE(strings_of(r->envp()).empty());
}

TEST(ExecArrays, AnEmptyCommandAndAProgramNotOnPathAreErrorsNamingIt) {
  EXPECT_EQ(ExecArrays::resolve({}, kPath).status().code(), StatusCode::kInvalidArgument);
  BinDir bin("trainer");
  Result<ExecArrays> r = ExecArrays::resolve({"no-such-trainer"}, {{"PATH", bin.path()}});
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "'no-such-trainer': command not found on PATH");
}

TEST(Spawn, RunsWithTheGivenEnvOnlyOnSeparatePipesInItsOwnGroup) {
  Result<ExecArrays> exec =
      ExecArrays::resolve({"sh", "-c", "echo \"X=$X HOME=$HOME\"; ps -o pgid= -p $$ | tr -d ' ' >&2; exit 3"},
                          {{"PATH", "/usr/bin:/bin"}, {"X", "1"}});
  ASSERT_TRUE(exec.is_ok());
  Result<Child> child = spawn(*exec, {});
  ASSERT_TRUE(child.is_ok()) << child.status().message();
  EXPECT_FALSE(child->in.valid());
  EXPECT_EQ(read_all(child->out), "X=1 HOME=\n");
  EXPECT_EQ(read_all(child->err), std::to_string(child->pid) + "\n");  // its group is its own pid
  EXPECT_EQ(wait_exit_code(child->pid), 3);
}

TEST(Spawn, ANewSessionIsLedByTheChildAsItsGroupIs) {
  Result<ExecArrays> exec = ExecArrays::resolve({"sh", "-c", "ps -o sid=,pgid= -p $$ | awk '{print $1, $2}'"}, kPath);
  ASSERT_TRUE(exec.is_ok());
  SpawnOptions options;
  options.new_session = true;
  Result<Child> child = spawn(*exec, options);
  ASSERT_TRUE(child.is_ok()) << child.status().message();
  const std::string id = std::to_string(child->pid);
  EXPECT_EQ(read_all(child->out), id + " " + id + "\n");  // session and group: its own pid
  EXPECT_EQ(wait_exit_code(child->pid), 0);
}

TEST(Spawn, MergedOutputAndAStdinPipeWithItsFirstLine) {
  Result<ExecArrays> exec = ExecArrays::resolve({"sh", "-c", "read line; echo got $line; echo oops >&2"}, kPath);
  ASSERT_TRUE(exec.is_ok());
  SpawnOptions options;
  options.stdin_pipe = true;
  options.stdin_data = "secret\n";
  options.merge_output = true;
  Result<Child> child = spawn(*exec, options);
  ASSERT_TRUE(child.is_ok());
  EXPECT_FALSE(child->err.valid());
  ASSERT_TRUE(child->in.valid());
  child->in.reset();
  EXPECT_EQ(read_all(child->out), "got secret\noops\n");
  EXPECT_EQ(wait_exit_code(child->pid), 0);
}

TEST(Spawn, TheChildGetsNoDescriptorOfTheCallersButItsThree) {
  Result<Pipe> leak = make_pipe();
  ASSERT_TRUE(leak.is_ok());
  const int raw = dup(leak->read.get());  // not close-on-exec
  ASSERT_GE(raw, 0);
  Result<ExecArrays> exec = ExecArrays::resolve({"sh", "-c", "ls /proc/self/fd | wc -l"}, kPath);
  ASSERT_TRUE(exec.is_ok());
  Result<Child> child = spawn(*exec, {});
  close(raw);
  ASSERT_TRUE(child.is_ok());
  // 0, 1, 2 and the descriptor `ls` opens to read /proc/self/fd.
  EXPECT_EQ(read_all(child->out), "4\n");
  EXPECT_EQ(wait_exit_code(child->pid), 0);
}

TEST(Spawn, AnExecFailureIsExitCode127WithTheReasonOnStderr) {
  BinDir bin("not-a-program");
  fs::permissions(fs::path(bin.path()) / "not-a-program", fs::perms::owner_read | fs::perms::owner_write);
  Result<ExecArrays> exec = ExecArrays::resolve({bin.path() + "/not-a-program"}, kPath);
  ASSERT_TRUE(exec.is_ok());
  SpawnOptions options;
  options.who = "korovodrun";
  Result<Child> child = spawn(*exec, options);
  ASSERT_TRUE(child.is_ok());
  EXPECT_EQ(read_all(child->err),
            "korovodrun: cannot execute " + bin.path() + "/not-a-program (errno " + std::to_string(EACCES) + ")\n");
  EXPECT_EQ(wait_exit_code(child->pid), 127);
}

TEST(Spawn, ASignalToTheGroupIs128PlusItsNumberAndPollingDoesNotBlock) {
  Result<ExecArrays> exec = ExecArrays::resolve({"sleep", "300"}, kPath);
  ASSERT_TRUE(exec.is_ok());
  Result<Child> child = spawn(*exec, {});
  ASSERT_TRUE(child.is_ok());
  EXPECT_EQ(reap_group_if_ended(child->pid), std::nullopt);
  ASSERT_EQ(kill(-child->pid, SIGKILL), 0);
  EXPECT_EQ(wait_group(child->pid), 128 + SIGKILL);
}

// What a rank or a pod's process leaves running in its group ends with it.
TEST(Spawn, WhenTheLeaderEndsWhatItLeftInItsGroupIsKilled) {
  Result<ExecArrays> exec = ExecArrays::resolve({"sh", "-c", "sleep 300 & echo $!; exit 4"}, kPath);
  ASSERT_TRUE(exec.is_ok());
  Result<Child> child = spawn(*exec, {});
  ASSERT_TRUE(child.is_ok());
  char buf[32] = {};
  ASSERT_GT(read(child->out.get(), buf, sizeof buf - 1), 0);
  const pid_t left = static_cast<pid_t>(std::atol(buf));
  ASSERT_GT(left, 0);
  std::optional<int> code;
  for (int i = 0; i < 500 && !(code = reap_group_if_ended(child->pid)); ++i) usleep(10000);
  EXPECT_EQ(code, 4);
  // `left` was re-parented (to init or a subreaper) and is killed: gone or a zombie soon.
  bool gone = false;
  for (int i = 0; i < 500 && !gone; ++i) {
    std::ifstream stat("/proc/" + std::to_string(left) + "/stat");
    std::string line;
    gone = !std::getline(stat, line) || line.substr(line.rfind(')') + 2, 1) == "Z";
    if (!gone) usleep(10000);
  }
  EXPECT_TRUE(gone) << "pid " << left << " still runs";
}

TEST(Children, ListsThisProcesssChildrenAndNoOneElses) {
  Result<ExecArrays> exec = ExecArrays::resolve({"sleep", "300"}, kPath);
  ASSERT_TRUE(exec.is_ok());
  Result<Child> child = spawn(*exec, {});
  ASSERT_TRUE(child.is_ok());
  const std::vector<pid_t> mine = children_of(getpid());
  EXPECT_NE(std::find(mine.begin(), mine.end(), child->pid), mine.end());
  const std::vector<pid_t> its = children_of(child->pid);
  EXPECT_TRUE(its.empty());
  kill(-child->pid, SIGKILL);
  EXPECT_EQ(wait_group(child->pid), 128 + SIGKILL);
}

TEST(Children, KillAndReapPassesEndEveryChildEvenOneIgnoringSigterm) {
  pid_t children[2];
  for (pid_t& c : children) {
    c = fork();
    if (c == 0) {
      signal(SIGTERM, SIG_IGN);
      for (;;) pause();
    }
    ASSERT_GT(c, 0);
  }
  int reaped = 0;
  ReapPass pass;
  for (int i = 0; i < 500 && !(pass = kill_and_reap_children()).none_left; ++i) {
    reaped += pass.reaped;
    usleep(10000);
  }
  reaped += pass.reaped;
  EXPECT_TRUE(pass.none_left);
  EXPECT_GE(reaped, 2);
  for (pid_t c : children) EXPECT_TRUE(kill(c, 0) != 0 && errno == ESRCH) << "child " << c << " still exists";
}

}  // namespace
}  // namespace korovod::os
