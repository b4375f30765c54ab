#include "local/sandbox/volumes.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "kube/memory_client.h"

namespace local {
namespace {
namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int mode_of(const fs::path& p) {
  struct stat st{};
  stat(p.c_str(), &st);
  return st.st_mode & 07777;
}

class VolumesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("korovod-volumes-test-" + std::to_string(getpid()));
    fs::remove_all(dir);
    client.create(kube::resources::kConfigMaps, "default",
                  {{"metadata", {{"name", "pi-config"}}},
                   {"data", {{"hostfile", "pi-worker-0.pi.default.svc slots=1\n"},
                             {"discover_hosts.sh", "#!/bin/sh\n"}}}});
    client.create(kube::resources::kSecrets, "default",
                  {{"metadata", {{"name", "pi-ssh"}}},
                   {"data", {{"ssh-privatekey", "cHJpdg=="}, {"ssh-publickey", "cHVi"}}}});
  }
  void TearDown() override { fs::remove_all(dir); }
  fs::path dir;
  kube::MemoryClient client;
};

TEST_F(VolumesTest, ProjectsItemsWithModesAsTheOperatorMountsThem) {
  auto pod = kube::Object::parse(R"({"metadata": {"name": "l"}, "spec": {"volumes": [
    {"name": "mpi-job-config", "configMap": {"name": "pi-config", "items": [
       {"key": "hostfile", "path": "hostfile", "mode": 292},
       {"key": "discover_hosts.sh", "path": "discover_hosts.sh", "mode": 365}]}},
    {"name": "ssh-auth", "secret": {"secretName": "pi-ssh", "defaultMode": 384, "items": [
       {"key": "ssh-privatekey", "path": "id_rsa"},
       {"key": "ssh-publickey", "path": "id_rsa.pub"},
       {"key": "ssh-publickey", "path": "authorized_keys"}]}},
    {"name": "scratch", "emptyDir": {}}]}})");
  auto vols = materialize_volumes(pod, client_env_sources(client, "default"), dir);
  ASSERT_EQ(vols.size(), 3u);
  const fs::path cfg = dir / "volumes" / "mpi-job-config";
  EXPECT_EQ(slurp(cfg / "hostfile"), "pi-worker-0.pi.default.svc slots=1\n");
  EXPECT_EQ(mode_of(cfg / "hostfile"), 0444);
  EXPECT_EQ(mode_of(cfg / "discover_hosts.sh"), 0555);
  const fs::path ssh = dir / "volumes" / "ssh-auth";
  EXPECT_EQ(slurp(ssh / "id_rsa"), "priv");
  EXPECT_EQ(slurp(ssh / "authorized_keys"), "pub");
  EXPECT_EQ(mode_of(ssh / "id_rsa"), 0600);
  EXPECT_TRUE(fs::is_directory(dir / "volumes" / "scratch"));

  auto container = kube::Object::parse(R"({"volumeMounts": [
    {"name": "mpi-job-config", "mountPath": "/etc/mpi"},
    {"name": "ssh-auth", "mountPath": "/root/.ssh", "readOnly": true}]})");
  auto mounts = container_mounts(container, vols);
  ASSERT_EQ(mounts.size(), 2u);
  EXPECT_EQ(mounts[0], (Mount{cfg, "/etc/mpi", false}));
  EXPECT_EQ(mounts[1], (Mount{ssh, "/root/.ssh", true}));
}

TEST_F(VolumesTest, AllKeysWithDefaultModeWhenNoItems) {
  auto pod = kube::Object::parse(
      R"({"spec": {"volumes": [{"name": "c", "configMap": {"name": "pi-config"}}]}})");
  materialize_volumes(pod, client_env_sources(client, "default"), dir);
  EXPECT_EQ(mode_of(dir / "volumes/c/hostfile"), 0644);
  EXPECT_TRUE(fs::exists(dir / "volumes/c/discover_hosts.sh"));
}

TEST_F(VolumesTest, MissingObjectFailsUnlessOptional) {
  auto pod = kube::Object::parse(
      R"({"spec": {"volumes": [{"name": "c", "configMap": {"name": "absent"}}]}})");
  EXPECT_THROW(materialize_volumes(pod, client_env_sources(client, "default"), dir),
               std::runtime_error);
  pod["spec"]["volumes"][0]["configMap"]["optional"] = true;
  EXPECT_NO_THROW(materialize_volumes(pod, client_env_sources(client, "default"), dir));
}

TEST_F(VolumesTest, RefreshFollowsTheConfigMapByRenameAndKeepsContentWhenItGoes) {
  auto pod = kube::Object::parse(R"({"spec": {"volumes": [
    {"name": "mpi-job-config", "configMap": {"name": "pi-config", "items": [
       {"key": "discover_hosts.sh", "path": "discover_hosts.sh", "mode": 365}]}},
    {"name": "scratch", "emptyDir": {}}]}})");
  const auto sources = client_env_sources(client, "default");
  materialize_volumes(pod, sources, dir);
  const fs::path script = dir / "volumes/mpi-job-config/discover_hosts.sh";
  std::ofstream(dir / "volumes/scratch/mine") << "kept";
  struct stat before{};
  stat(script.c_str(), &before);
  refresh_volumes(pod, sources, dir);  // unchanged: the file is not rewritten
  struct stat same{};
  stat(script.c_str(), &same);
  EXPECT_EQ(same.st_ino, before.st_ino);

  kube::Object cm = client.get(kube::resources::kConfigMaps, "default", "pi-config");
  cm["data"]["discover_hosts.sh"] = "#!/bin/sh\necho pi-worker-0.pi.default.svc:1\n";
  client.update(kube::resources::kConfigMaps, "default", cm);
  refresh_volumes(pod, sources, dir);
  EXPECT_EQ(slurp(script), "#!/bin/sh\necho pi-worker-0.pi.default.svc:1\n");
  EXPECT_EQ(mode_of(script), 0555);
  struct stat after{};
  stat(script.c_str(), &after);
  EXPECT_NE(after.st_ino, before.st_ino) << "replaced in place, not by rename";
  EXPECT_EQ(slurp(dir / "volumes/scratch/mine"), "kept");
  for (const auto& e : fs::directory_iterator(dir / "volumes/mpi-job-config")) {
    EXPECT_EQ(e.path().filename(), "discover_hosts.sh") << "a temporary file was left";
  }

  client.remove(kube::resources::kConfigMaps, "default", "pi-config", {});
  EXPECT_NO_THROW(refresh_volumes(pod, sources, dir));
  EXPECT_EQ(slurp(script), "#!/bin/sh\necho pi-worker-0.pi.default.svc:1\n");
}

TEST_F(VolumesTest, UnsupportedVolumeTypeThrows) {
  auto pod = kube::Object::parse(
      R"({"spec": {"volumes": [{"name": "p", "persistentVolumeClaim": {"claimName": "x"}}]}})");
  EXPECT_THROW(materialize_volumes(pod, client_env_sources(client, "default"), dir),
               std::runtime_error);
}

TEST(ContainerMounts, UnknownVolumeThrows) {
  auto container = kube::Object::parse(R"({"volumeMounts": [{"name": "x", "mountPath": "/x"}]})");
  EXPECT_THROW(container_mounts(container, {}), std::runtime_error);
}

}  // namespace
}  // namespace local
