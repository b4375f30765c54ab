#include "local/pod_launch.h"

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

}  // namespace
}  // namespace local
