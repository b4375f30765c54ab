// reap_all_children: every child left is killed and reaped within the limit on the clock.
#include "local/process/reaper.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "kube/fake_clock.h"

namespace local {
namespace {

TEST(Reaper, KillsAndReapsEveryChildLeft) {
  pid_t children[2];
  for (pid_t& child : children) {
    child = fork();
    if (child == 0) {
      signal(SIGTERM, SIG_IGN);  // SIGKILL is what the reaper sends
      for (;;) pause();
    }
    ASSERT_GT(child, 0);
  }
  kube::RealClock clock;
  EXPECT_EQ(reap_all_children(std::chrono::seconds(5), clock), 2);
  for (pid_t child : children) {
    int status = 0;
    EXPECT_EQ(waitpid(child, &status, WNOHANG), -1);
    EXPECT_EQ(errno, ECHILD) << "child " << child << " was not reaped";
  }
}

TEST(Reaper, WithNoChildrenReturnsAtOnceWithoutWaitingOnTheClock) {
  kube::FakeClock clock;  // never advanced: a wait would not return
  EXPECT_EQ(reap_all_children(std::chrono::seconds(5), clock), 0);
  EXPECT_EQ(clock.waits_started(), 0u);
}

}  // namespace
}  // namespace local
