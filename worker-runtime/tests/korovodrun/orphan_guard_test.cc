#include "orphan_guard.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <thread>

#include "child_process.h"
#include "process_probe.h"

namespace korovod::launcher {
namespace {

using testing::processes_with;
using testing::unique_marker;

// A process group like a rank's: a shell with a grandchild carrying the marker.
pid_t start_group(const std::string& marker) {
  Result<os::Child> child =
      spawn_process({{"sh", "-c", "sh -c 'sleep 30; : " + marker + "' & wait"}, {{"PATH", "/usr/bin:/bin"}}, false, ""});
  EXPECT_TRUE(child.is_ok()) << child.status().to_string();
  return child.is_ok() ? child->pid : -1;
}

bool gone_within(const std::string& marker, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!processes_with(marker).empty()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

void wait_for_marker(const std::string& marker) {
  for (int i = 0; i < 200 && processes_with(marker).empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

TEST(OrphanGuard, EndsWatchedGroupsWhenKorovodrunVanishes) {
  auto guard = OrphanGuard::start(std::chrono::milliseconds(200));
  ASSERT_TRUE(guard.is_ok()) << guard.status().to_string();
  const std::string marker = unique_marker();
  const pid_t group = start_group(marker);
  (*guard)->watch(group);
  wait_for_marker(marker);
  ASSERT_FALSE(processes_with(marker).empty());
  (*guard)->abandon();  // the pipe closes without "done", as when korovodrun is SIGKILLed
  EXPECT_TRUE(gone_within(marker, std::chrono::milliseconds(2000)));
  waitpid(group, nullptr, 0);
}

TEST(OrphanGuard, LeavesGroupsAloneAfterACleanExitOrWhenForgotten) {
  const std::string kept = unique_marker();
  const pid_t kept_group = start_group(kept);
  const std::string forgotten = unique_marker() + "-forgotten";
  const pid_t forgotten_group = start_group(forgotten);
  {
    auto guard = OrphanGuard::start(std::chrono::milliseconds(100));
    ASSERT_TRUE(guard.is_ok());
    (*guard)->watch(kept_group);
    (*guard)->watch(forgotten_group);
    (*guard)->forget(forgotten_group);
  }  // destroyed: "done"
  auto abandoned = OrphanGuard::start(std::chrono::milliseconds(100));
  ASSERT_TRUE(abandoned.is_ok());
  (*abandoned)->watch(forgotten_group);
  (*abandoned)->forget(forgotten_group);
  (*abandoned)->abandon();
  wait_for_marker(kept);
  wait_for_marker(forgotten);
  EXPECT_FALSE(processes_with(kept).empty()) << "a clean exit kills nothing";
  EXPECT_FALSE(processes_with(forgotten).empty()) << "a forgotten group is not killed";
  for (pid_t g : {kept_group, forgotten_group}) {
    kill(-g, SIGKILL);
    waitpid(g, nullptr, 0);
  }
}

}  // namespace
}  // namespace korovod::launcher
