#include "local/process/process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <thread>

#include <stdexcept>
#include <string>
#include <vector>

#include "os/line_splitter.h"

namespace local {
namespace {

TEST(ExecArrays, EmptyCommandAndAProgramNotOnPathAreErrorsNamingIt) {
  EXPECT_THROW(exec_arrays(Exec{{}, {{"PATH", "/bin"}}}), std::invalid_argument);
  try {
    exec_arrays(Exec{{"no-such-trainer-korovod"}, {{"PATH", "/usr/bin:/bin"}}});
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "executable file not found in $PATH: no-such-trainer-korovod");
  }
}

// (How argv[0] is resolved: os/spawn_test.cc; here, the errors in local mode's error model.)

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

TEST(HostProcessLauncher, AProgramThatCannotBeExecutedEndsWith127AndSaysWhyInItsOutput) {
  HostProcessLauncher launcher;  // a file without execute permission
  const RunResult r = run_to_end(launcher, Exec{{"/etc/passwd"}, {{"PATH", "/usr/bin:/bin"}}});
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_EQ(r.output,
            (std::vector<std::string>{"korovod: cannot execute /etc/passwd (errno " + std::to_string(EACCES) + ")"}));
}

// A pod's output in lines as korovodrun reads a rank's (os/line_splitter.h): a progress bar's
// "\r" ends a line, and a process that never ends its line cannot grow local mode's memory.
TEST(HostProcessLauncher, OutputLinesEndAtCarriageReturnsAndAreBounded) {
  HostProcessLauncher launcher;
  const RunResult r = run_to_end(
      launcher, Exec{{"sh", "-c", "printf '10%%\\r20%%\\rdone\\n'; head -c 150000 /dev/zero | tr '\\0' x"},
                     {{"PATH", "/usr/bin:/bin"}}});
  EXPECT_EQ(r.exit_code, 0);
  const size_t max = korovod::os::LineSplitter::kDefaultMaxLineBytes;
  ASSERT_EQ(r.output.size(), 6u);
  EXPECT_EQ(r.output[0], "10%");
  EXPECT_EQ(r.output[1], "20%");
  EXPECT_EQ(r.output[2], "done");
  EXPECT_EQ(r.output[3], std::string(max, 'x'));
  EXPECT_EQ(r.output[4], std::string(max, 'x'));
  EXPECT_EQ(r.output[5], std::string(150000 - 2 * max, 'x')) << "the unfinished last line, at the end";
}

TEST(HostProcessLauncher, AProgramNotOnPathIsAnErrorAtStart) {
  HostProcessLauncher launcher;
  EXPECT_THROW(launcher.start(Exec{{"no-such-program-korovod"}, {{"PATH", "/usr/bin:/bin"}}},
                              [](const std::string&) {}),
               std::runtime_error);
}

}  // namespace
}  // namespace local
