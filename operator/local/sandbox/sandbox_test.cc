#include "local/sandbox/sandbox.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "local/rsh/rsh_agent.h"

namespace local {
namespace {

std::vector<Mount> mounts() {
  return {{"/w/pods/default/l/volumes/mpi-job-config", "/etc/mpi", false},
          {"/w/pods/default/l/volumes/ssh-auth", "/root/.ssh", true}};
}

TEST(RewriteMountPaths, ReplacesMountPathsAtPathBoundaries) {
  EXPECT_EQ(rewrite_mount_paths("/etc/mpi/hostfile", mounts()),
            "/w/pods/default/l/volumes/mpi-job-config/hostfile");
  EXPECT_EQ(rewrite_mount_paths("--hostfile=/etc/mpi/hostfile", mounts()),
            "--hostfile=/w/pods/default/l/volumes/mpi-job-config/hostfile");
  EXPECT_EQ(rewrite_mount_paths("/a:/root/.ssh", mounts()), "/a:/w/pods/default/l/volumes/ssh-auth");
  EXPECT_EQ(rewrite_mount_paths("/etc/mpix", mounts()), "/etc/mpix");
  EXPECT_EQ(rewrite_mount_paths("x/etc/mpi", mounts()), "x/etc/mpi");
}

TEST(Sandboxed, BwrapBindsVolumesParentsFirstAndSetsHostname) {
  LaunchSpec spec;
  spec.command = {"mpirun", "-n", "2", "pi"};
  spec.hostname = "pi-launcher";
  spec.working_dir = "/w/pods/default/l";
  spec.mounts = {{"/v/b", "/etc/mpi/sub", false}, {"/v/a", "/etc/mpi", true}};
  auto e = sandboxed(spec, Isolation::Bwrap, "/usr/bin/bwrap");
  auto at = [&](const std::string& s) { return std::find(e.argv.begin(), e.argv.end(), s) - e.argv.begin(); };
  ASSERT_EQ(e.argv[0], "/usr/bin/bwrap");
  EXPECT_EQ(e.argv[size_t(at("--hostname")) + 1], "pi-launcher");
  EXPECT_LT(at("/etc/mpi"), at("/etc/mpi/sub"));
  EXPECT_EQ(e.argv[size_t(at("/v/a")) - 1], "--ro-bind");
  EXPECT_NE(at("--unshare-pid"), long(e.argv.size()));
  EXPECT_EQ(e.argv[size_t(at("--chdir")) + 1], "/w/pods/default/l");
  const auto dash = size_t(at("--"));
  EXPECT_EQ(std::vector<std::string>(e.argv.begin() + long(dash) + 1, e.argv.end()), spec.command);
}

TEST(Sandboxed, RewriteModeRewritesArgsEnvAndWorkingDir) {
  LaunchSpec spec;
  spec.command = {"cat", "/etc/mpi/hostfile"};
  spec.env = {{"OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"}};
  spec.working_dir = "/etc/mpi";
  spec.mounts = mounts();
  auto e = sandboxed(spec, Isolation::Rewrite, "/usr/bin/bwrap");
  const std::string cfg = "/w/pods/default/l/volumes/mpi-job-config";
  EXPECT_EQ(e.argv, (std::vector<std::string>{"/usr/bin/env", "-C", cfg, "cat", cfg + "/hostfile"}));
  EXPECT_EQ(get_env(e.env, "OMPI_MCA_orte_default_hostfile"), cfg + "/hostfile");
}

TEST(RshArgs, SkipsSshOptionsAndJoinsTheCommand) {
  auto r = parse_rsh_args({"-o", "ConnectionAttempts=10", "-x", "-p", "2222",
                           "pi-worker-1.pi.default.svc", "orted", "-mca", "ess", "\"env\""});
  EXPECT_EQ(r.host, "pi-worker-1.pi.default.svc");
  EXPECT_EQ(r.command, "orted -mca ess \"env\"");
  EXPECT_EQ(parse_rsh_args({"root@h", "true"}).host, "h");
  EXPECT_THROW(parse_rsh_args({"-o", "X"}), std::invalid_argument);
  EXPECT_THROW(parse_rsh_args({"host"}), std::invalid_argument);
}

TEST(RshArgs, HostNamesAPodAndItsNamespace) {
  EXPECT_EQ(pod_of_host("pi-worker-1.pi.team-a.svc.cluster.local", "default"),
            (std::pair<std::string, std::string>{"team-a", "pi-worker-1"}));
  EXPECT_EQ(pod_of_host("pi-worker-0", "ns"), (std::pair<std::string, std::string>{"ns", "pi-worker-0"}));
}

}  // namespace
}  // namespace local
