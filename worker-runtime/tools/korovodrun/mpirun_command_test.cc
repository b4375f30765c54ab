#include "mpirun_command.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace korovod::launcher {
namespace {

using Words = std::vector<std::string>;

TEST(MpirunCommand, BuildsHorovodrunsOpenMpiLine) {
  LaunchOptions o;
  o.num_proc = 4;
  o.command = {"python3", "train.py", "--epochs", "2"};
  const EnvMap env = {{"PATH", "/usr/bin"}, {"HOROVOD_FUSION_THRESHOLD", "1"}, {"OLDPWD", "/"}};
  const Words argv = mpirun_command(o, {{"a", 2}, {"b", 2}}, env, /*running_as_root=*/false);
  EXPECT_EQ(argv, (Words{"mpirun", "--tag-output", "-np", "4", "-H", "a:2,b:2", "-bind-to", "none", "-map-by", "slot",
                         "-mca", "pml", "ob1", "-mca", "btl", "^openib", "-x", "HOROVOD_FUSION_THRESHOLD", "-x", "PATH",
                         "python3", "train.py", "--epochs", "2"}));
}

TEST(MpirunCommand, RootSshAndInterfaceFlags) {
  LaunchOptions o;
  o.num_proc = 2;
  o.command = {"prog"};
  o.ssh_port = 2022;
  o.ssh_identity_file = "/k/id_rsa";
  o.network_interfaces = {"eth0", "ib0"};
  const Words argv = mpirun_command(o, {{"localhost", 2}}, {}, /*running_as_root=*/true);
  EXPECT_EQ(argv[1], "--allow-run-as-root");
  auto has = [&argv](const Words& seq) { return std::search(argv.begin(), argv.end(), seq.begin(), seq.end()) != argv.end(); };
  EXPECT_TRUE(has({"-mca", "plm_rsh_args", "-p 2022 -i /k/id_rsa"}));
  EXPECT_TRUE(has({"-mca", "btl_tcp_if_include", "eth0,ib0"}));
  EXPECT_EQ(argv.back(), "prog");
  EXPECT_FALSE(has({"-mca", "plm_rsh_no_tree_spawn", "true"}));
}

TEST(MpirunCommand, LargeClustersSpawnWithoutTree) {
  LaunchOptions o;
  o.num_proc = 64;
  o.command = {"prog"};
  std::vector<HostSlots> hosts;
  for (int i = 0; i < 64; ++i) hosts.push_back({"h" + std::to_string(i), 1});
  const Words argv = mpirun_command(o, hosts, {}, false);
  const Words want{"-mca", "plm_rsh_no_tree_spawn", "true", "-mca", "plm_rsh_num_concurrent", "64"};
  EXPECT_NE(std::search(argv.begin(), argv.end(), want.begin(), want.end()), argv.end());
}

TEST(MpirunCommand, RecognisesOpenMpi) {
  EXPECT_TRUE(is_open_mpi_version("mpirun (Open MPI) 4.1.4\n\nReport bugs to http://www.open-mpi.org/community/help/\n"));
  EXPECT_TRUE(is_open_mpi_version("mpirun (OpenRTE) 2.1.1"));
  EXPECT_FALSE(is_open_mpi_version("HYDRA build details:\n    Version: 4.0.2"));
}

TEST(MpirunCommand, MissingMpirunIsNamed) {
  const Status s = exec_mpirun({"mpirun", "-np", "1", "true"}, {{"PATH", "/nonexistent-dir"}});
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("mpirun is not on PATH"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace korovod::launcher
