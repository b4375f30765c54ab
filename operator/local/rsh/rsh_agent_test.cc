// The rsh agent's bookkeeping: what it starts in a pod carries the pod's marker, and the pod
// runtime stops exactly those processes when the pod goes.
#include "local/rsh/rsh_agent.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <thread>

#include "local/pods/pod_launch.h"

namespace local {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

// A child running `sleep 60` with KOROVOD_RSH_POD=marker (empty: without the variable).
pid_t spawn_sleep(const std::string& marker) {
  const pid_t pid = fork();
  if (pid == 0) {
    std::string var = std::string(kRshPodEnv) + "=" + marker;
    char* env[] = {marker.empty() ? nullptr : var.data(), nullptr};
    char* argv[] = {const_cast<char*>("sleep"), const_cast<char*>("60"), nullptr};
    execve("/bin/sleep", argv, env);
    _exit(127);
  }
  return pid;
}

bool contains(const std::vector<pid_t>& pids, pid_t p) {
  return std::find(pids.begin(), pids.end(), p) != pids.end();
}

TEST(RshAgent, ParsesSshStyleArguments) {
  const auto req = parse_rsh_args({"-o", "BatchMode=yes", "-p", "22", "-i", "/k", "root@w-0.j.ns.svc",
                                   "cd /x; env A=1 python3 t.py"});
  EXPECT_EQ(req.host, "w-0.j.ns.svc");
  EXPECT_EQ(req.command, "cd /x; env A=1 python3 t.py");
  EXPECT_EQ(pod_of_host("w-0.j.ns.svc", "default"), (std::pair<std::string, std::string>{"ns", "w-0"}));
  EXPECT_THROW(parse_rsh_args({"-o", "X"}), std::invalid_argument);
}

TEST(RshAgent, ExecCarriesThePodMarker) {
  const fs::path dir = fs::temp_directory_path() / ("korovod-rsh-test-" + std::to_string(getpid()));
  fs::create_directories(dir);
  LaunchSpec spec;
  spec.env = {{"PATH", "/usr/bin:/bin"}};
  spec.working_dir = "/";
  write_pod_context(dir, spec, Isolation::Rewrite, "/usr/bin/bwrap");
  const Exec e = rsh_exec({"w-0", "echo hi"}, dir);
  EXPECT_EQ(get_env(e.env, kRshPodEnv), dir.string());
  fs::remove_all(dir);
}

TEST(RshAgent, StopsTheProcessesOfThatPodOnly) {
  kube::RealClock clock;
  const pid_t mine = spawn_sleep("/pods/ns/w-1"), other = spawn_sleep("/pods/ns/w-10"),
              none = spawn_sleep("");
  ASSERT_GT(mine, 0);
  std::this_thread::sleep_for(100ms);  // let them exec
  const auto found = rsh_processes("/pods/ns/w-1");
  EXPECT_TRUE(contains(found, mine));
  EXPECT_FALSE(contains(found, other));
  EXPECT_FALSE(contains(found, none));

  EXPECT_EQ(stop_rsh_processes("/pods/ns/w-1", 2s, clock), 1);
  int status = 0;
  ASSERT_EQ(waitpid(mine, &status, 0), mine);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_EQ(kill(other, 0), 0) << "another pod's process was stopped";
  EXPECT_EQ(stop_rsh_processes("/pods/ns/w-1", 2s, clock), 0);
  for (pid_t p : {other, none}) {
    kill(p, SIGKILL);
    waitpid(p, &status, 0);
  }
}

TEST(RshAgent, KillsWhatIgnoresSigterm) {
  const pid_t pid = fork();
  if (pid == 0) {
    std::string var = std::string(kRshPodEnv) + "=/pods/ns/stubborn";
    char* env[] = {var.data(), nullptr};
    char* argv[] = {const_cast<char*>("sh"), const_cast<char*>("-c"),
                    const_cast<char*>("trap '' TERM; while :; do sleep 1; done"), nullptr};
    execve("/bin/sh", argv, env);
    _exit(127);
  }
  std::this_thread::sleep_for(200ms);
  kube::RealClock clock;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_GE(stop_rsh_processes("/pods/ns/stubborn", 300ms, clock), 1);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
}

}  // namespace
}  // namespace local
