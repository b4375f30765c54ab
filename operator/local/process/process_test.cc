#include "local/process/process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace local {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> strings_of(char* const* array) {
  std::vector<std::string> out;
  for (; *array != nullptr; ++array) out.emplace_back(*array);
  return out;
}

// A folder holding one executable file, `name`, removed at the end of the test.
class BinDir {
 public:
  explicit BinDir(const std::string& name)
      : dir_(fs::temp_directory_path() / ("korovod-process-test-" + std::to_string(getpid()))) {
    fs::create_directories(dir_);
    std::ofstream(dir_ / name) << "#!/bin/sh\n";
    fs::permissions(dir_ / name, fs::perms::owner_all);
  }
  ~BinDir() { fs::remove_all(dir_); }
  std::string path() const { return dir_.string(); }

 private:
  fs::path dir_;
};

TEST(ExecArgs, ResolvesArgv0AgainstTheEnvsPathAndNullTerminatesBothArrays) {
  BinDir bin("trainer");
  const Exec exec{{"trainer", "--epochs", "3"},
                  {{"PATH", "/nonexistent:" + bin.path()}, {"RANK", "1"}, {"EMPTY", ""}}};
  const ExecArgs args(exec);
  EXPECT_EQ(args.program(), bin.path() + "/trainer");
  EXPECT_EQ(strings_of(args.argv()), (std::vector<std::string>{"trainer", "--epochs", "3"}));
  EXPECT_EQ(strings_of(args.envp()),
            (std::vector<std::string>{"PATH=/nonexistent:" + bin.path(), "RANK=1", "EMPTY="}));
}

TEST(ExecArgs, NameWithASlashIsTakenAsGivenAndAnEmptyEnvGivesAnEmptyEnvp) {
  const ExecArgs args(Exec{{"./run.sh"}, {}});
  EXPECT_EQ(args.program(), "./run.sh");
  EXPECT_EQ(strings_of(args.argv()), (std::vector<std::string>{"./run.sh"}));
  EXPECT_TRUE(strings_of(args.envp()).empty());
}

TEST(ExecArgs, EmptyCommandAndAProgramNotOnPathAreErrorsNamingIt) {
  EXPECT_THROW(ExecArgs(Exec{{}, {{"PATH", "/bin"}}}), std::invalid_argument);
  BinDir bin("trainer");
  try {
    ExecArgs args(Exec{{"no-such-trainer"}, {{"PATH", bin.path()}}});
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "executable file not found in $PATH: no-such-trainer");
  }
}

// The real launcher: only the given environment, stdout and stderr both to the sink, the exit
// code as the shell gives it.
TEST(HostProcessLauncher, RunsWithTheGivenEnvOnlyAndReportsOutputAndExitCode) {
  HostProcessLauncher launcher;
  const RunResult r = run_to_end(
      launcher, Exec{{"sh", "-c", "echo \"X=$X HOME=$HOME\"; echo oops >&2; exit 3"},
                     {{"PATH", "/usr/bin:/bin"}, {"X", "1"}}});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.output, (std::vector<std::string>{"X=1 HOME=", "oops"}));
}

TEST(HostProcessLauncher, ASignalToTheGroupEndsTheProcessWith128PlusItsNumber) {
  HostProcessLauncher launcher;
  auto p = launcher.start(Exec{{"sleep", "300"}, {{"PATH", "/usr/bin:/bin"}}}, [](const std::string&) {});
  EXPECT_EQ(p->poll(), std::nullopt);
  p->signal(SIGKILL);
  EXPECT_EQ(p->wait(), 128 + SIGKILL);
  EXPECT_EQ(p->poll(), 128 + SIGKILL);
}

TEST(HostProcessLauncher, StopProcessKillsAGroupThatIgnoresSigtermAfterTheGrace) {
  HostProcessLauncher launcher;
  // The shell and its child both ignore SIGTERM (an ignored signal stays ignored across exec).
  std::atomic<bool> ready{false};
  auto p = launcher.start(
      Exec{{"sh", "-c", "trap '' TERM; sleep 300 & echo ready; wait"}, {{"PATH", "/usr/bin:/bin"}}},
      [&](const std::string& line) { ready = ready || line == "ready"; });
  for (int i = 0; i < 500 && !ready; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(ready) << "the shell did not start";
  kube::RealClock clock;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(stop_process(*p, std::chrono::milliseconds(300), clock), 128 + SIGKILL);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, std::chrono::milliseconds(300));
  EXPECT_LT(took, std::chrono::seconds(5));
}

TEST(HostProcessLauncher, AProgramNotOnPathIsAnErrorAtStart) {
  HostProcessLauncher launcher;
  EXPECT_THROW(launcher.start(Exec{{"no-such-program-korovod"}, {{"PATH", "/usr/bin:/bin"}}},
                              [](const std::string&) {}),
               std::runtime_error);
}

}  // namespace
}  // namespace local
