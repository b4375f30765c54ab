#include "local/pods/pod_launch.h"

#include <unistd.h>

#include <gtest/gtest.h>

namespace local {
namespace {
namespace fs = std::filesystem;

kube::Object test_pod() {
  return kube::Object::parse(R"({"metadata": {"name": "digits-worker-0", "namespace": "default"},
                                 "spec": {}})");
}

LaunchSpec launch_with(const LaunchDefaults& defaults, const EnvList& container_env = {}) {
  const auto container = kube::Object::parse(R"({"name": "worker", "args": ["true"]})");
  return container_launch(test_pod(), container, container_env, {}, "/tmp/pod", defaults);
}

TEST(PodLaunchTest, PythonPathIsTheGivenDirectoriesInOrder) {
  LaunchDefaults d;
  d.host_path_env = "/usr/bin";
  d.python_path = {"/b/python", "/other"};
  EXPECT_EQ(get_env(launch_with(d).env, "PYTHONPATH"), "/b/python:/other");
}

TEST(PodLaunchTest, NoPythonPathWithoutDirectories) {
  LaunchDefaults d;
  d.host_path_env = "/usr/bin";
  EXPECT_EQ(get_env(launch_with(d).env, "PYTHONPATH"), std::nullopt);
}

TEST(PodLaunchTest, ContainerPythonPathWins) {
  LaunchDefaults d;
  d.python_path = {"/b/python"};
  EXPECT_EQ(get_env(launch_with(d, {{"PYTHONPATH", "/app"}}).env, "PYTHONPATH"), "/app");
}

class BuildTreeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root = fs::temp_directory_path() / ("korovod-pod-launch-test-" + std::to_string(getpid()));
    fs::remove_all(root);
    fs::create_directories(root / "bin");
  }
  void TearDown() override { fs::remove_all(root); }
  fs::path root;
};

TEST_F(BuildTreeTest, FindsThePackageNextToTheBinDirectory) {
  fs::create_directories(root / "python" / "korovod");
  EXPECT_EQ(build_tree_python_path(root / "bin"),
            std::vector<std::string>{fs::canonical(root / "python").string()});
}

TEST_F(BuildTreeTest, NothingWhenThereIsNoKorovodPackage) {
  EXPECT_TRUE(build_tree_python_path(root / "bin").empty());
  fs::create_directories(root / "python" / "other");  // a python/ without korovod/ in it
  EXPECT_TRUE(build_tree_python_path(root / "bin").empty());
}

TEST_F(BuildTreeTest, LauncherGetsTheRshAgentAsMpirunsAgentAndAsSsh) {
  auto pod = kube::Object::parse(R"({"metadata": {"name": "el-launcher", "namespace": "ns",
      "labels": {"training.kubeflow.org/job-role": "launcher"}}, "spec": {}})");
  LaunchDefaults d;
  d.host_path_env = "/usr/bin";
  LaunchSpec launch = container_launch(pod, kube::Object::parse(R"({"name": "l", "args": ["true"]})"),
                                       {}, {}, "/tmp/pod", d);
  wire_for_rsh_agent(pod, launch, root / "bin", root / "shim");
  EXPECT_EQ(get_env(launch.env, "OMPI_MCA_plm_rsh_agent"), (root / "bin" / "korovod-rsh").string());
  EXPECT_EQ(get_env(launch.env, "PATH"), (root / "shim").string() + ":/usr/bin");
  EXPECT_EQ(fs::read_symlink(root / "shim" / "ssh"), root / "bin" / "korovod-rsh");
  // A second launcher (a restart) finds the link there.
  LaunchSpec again = container_launch(pod, kube::Object::parse(R"({"name": "l", "args": ["true"]})"),
                                      {}, {}, "/tmp/pod", d);
  EXPECT_NO_THROW(wire_for_rsh_agent(pod, again, root / "bin", root / "shim"));

  auto worker = kube::Object::parse(R"({"metadata": {"name": "el-worker-0", "namespace": "ns",
      "labels": {"training.kubeflow.org/job-role": "worker"}}, "spec": {}})");
  LaunchSpec w = container_launch(worker, kube::Object::parse(R"({"name": "w", "args": ["true"]})"),
                                  {}, {}, "/tmp/pod", d);
  wire_for_rsh_agent(worker, w, root / "bin", root / "shim");
  EXPECT_EQ(get_env(w.env, "PATH"), "/usr/bin") << "only the launcher's ssh is the agent";
}

// korovod.io/launch: agent: the worker's default `korovod-agent serve` is kept up like sshd, and
// the launcher's korovodrun gets korovod-rsh in place of korovod-agent's rsh.
TEST_F(BuildTreeTest, AgentModeJobsRunThroughTheLocalRshAgentToo) {
  auto pod = kube::Object::parse(R"({"metadata": {"name": "a-launcher", "namespace": "ns",
      "labels": {"training.kubeflow.org/job-role": "launcher"}}, "spec": {}})");
  LaunchDefaults d;
  d.host_path_env = "/usr/bin";
  LaunchSpec launch = container_launch(pod, kube::Object::parse(R"({"name": "l", "args": ["true"]})"),
                                       EnvList{{"KOROVOD_RSH_AGENT", "korovod-agent rsh"}}, {}, "/tmp/pod", d);
  wire_for_rsh_agent(pod, launch, root / "bin", root / "shim");
  EXPECT_EQ(get_env(launch.env, "KOROVOD_RSH_AGENT"), (root / "bin" / "korovod-rsh").string());
  auto worker = kube::Object::parse(R"({"metadata": {"name": "a-worker-0", "namespace": "ns",
      "labels": {"training.kubeflow.org/job-role": "worker"}}, "spec": {}})");
  LaunchSpec w = container_launch(worker, kube::Object::parse(R"({"name": "w", "command": ["korovod-agent", "serve"]})"),
                                  {}, {}, "/tmp/pod", d);
  wire_for_rsh_agent(worker, w, root / "bin", root / "shim");
  ASSERT_EQ(w.command.size(), 3u);
  EXPECT_NE(w.command[2].find("sleep infinity"), std::string::npos);
}

}  // namespace
}  // namespace local
