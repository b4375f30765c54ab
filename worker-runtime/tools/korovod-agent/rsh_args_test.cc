// `korovod-agent rsh`'s ssh-style arguments (rsh_args.h), in the shapes its callers use.
#include "rsh_args.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace korovod::agent {
namespace {

RshRequest parsed(const std::vector<std::string>& args, int default_port = 2223) {
  Result<RshRequest> r = parse_rsh_args(args, default_port);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? *r : RshRequest{};
}

std::string error_of(const std::vector<std::string>& args) {
  Result<RshRequest> r = parse_rsh_args(args, 2223);
  EXPECT_FALSE(r.is_ok());
  return r.is_ok() ? "" : r.status().message();
}

TEST(RshArgs, OpenMpiDaemonLaunch) {
  // plm_rsh_agent "korovod-agent rsh -p 2300" plus what Open MPI appends: its rsh args (-x),
  // the host, then the orted command as separate words.
  const RshRequest r = parsed({"-p", "2300", "-x", "worker-1.job.ns", "PATH=/opt/ompi/bin:$PATH", ";", "export",
                               "PATH", ";", "/opt/ompi/bin/orted", "-mca", "ess", "\"env\"", "-mca",
                               "ess_base_jobid", "\"123\""});
  EXPECT_EQ(r.host, "worker-1.job.ns");
  EXPECT_EQ(r.port, 2300);
  EXPECT_EQ(r.command,
            "PATH=/opt/ompi/bin:$PATH ; export PATH ; /opt/ompi/bin/orted -mca ess \"env\" -mca ess_base_jobid \"123\"");
}

TEST(RshArgs, SshOptionsWithValuesAreSkipped) {
  const RshRequest r =
      parsed({"-o", "ConnectionAttempts=10", "-oStrictHostKeyChecking=no", "-l", "root", "-i", "/k", "-T", "h", "true"});
  EXPECT_EQ(r.host, "h");
  EXPECT_EQ(r.port, 2223);
  EXPECT_EQ(r.command, "true");
}

TEST(RshArgs, KorovodrunRemoteRank) {
  // korovodrun --rsh-agent "korovod-agent rsh" with -p: <agent words> -p PORT HOST SCRIPT.
  const std::string script = "cd /w >/dev/null 2>&1; exec 3<&0 </dev/null; setsid env A='x y' prog & p=$!";
  const RshRequest r = parsed({"-p", "2400", "10.0.0.7", script});
  EXPECT_EQ(r.host, "10.0.0.7");
  EXPECT_EQ(r.port, 2400);
  EXPECT_EQ(r.command, script);
}

TEST(RshArgs, PortAttachedCombinedFlagsAndDefaultPort) {
  EXPECT_EQ(parsed({"-p2500", "h", "ls"}).port, 2500);
  EXPECT_EQ(parsed({"-xTp", "2501", "h", "ls"}).port, 2501);
  EXPECT_EQ(parsed({"h", "ls"}, 4000).port, 4000);
  // The last -p wins, as in ssh.
  EXPECT_EQ(parsed({"-p", "1", "-p", "2", "h", "ls"}).port, 2);
}

TEST(RshArgs, WordsAfterTheHostAreTheCommandEvenWhenTheyLookLikeOptions) {
  const RshRequest r = parsed({"-x", "h", "ls", "-p", "", "-l"});
  EXPECT_EQ(r.port, 2223);
  EXPECT_EQ(r.command, "ls -p  -l");
  EXPECT_EQ(parsed({"--", "-weird-host", "true"}).host, "-weird-host");
}

TEST(RshArgs, Errors) {
  EXPECT_NE(error_of({"-p"}).find("-p needs a value"), std::string::npos);
  EXPECT_NE(error_of({"-p", "http", "h", "ls"}).find("'http' is not a port"), std::string::npos);
  EXPECT_NE(error_of({"-p", "70000", "h", "ls"}).find("not a port"), std::string::npos);
  EXPECT_NE(error_of({"-x"}).find("no HOST"), std::string::npos);
  EXPECT_NE(error_of({"h"}).find("no COMMAND given for h"), std::string::npos);
}

}  // namespace
}  // namespace korovod::agent
