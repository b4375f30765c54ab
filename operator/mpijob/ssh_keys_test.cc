// The generated key pair against the real OpenSSH tools: ssh-keygen reads the private key and
// derives the same public key; sshd uses it as host key and accepts it for login, with the
// Secret's files laid out as the ssh-auth volume mounts them.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "mpijob/builders.h"
#include "mpijob/defaults.h"
#include "mpijob/ssh_keys.h"
#include "free_port.h"
#include "mpijob/testing/fixtures.h"

namespace mpijob {
namespace {

namespace fs = std::filesystem;

std::string run(const std::string& cmd) {
  std::string out;
  FILE* f = popen((cmd + " 2>&1").c_str(), "r");
  if (f == nullptr) return out;
  char buf[512];
  while (fgets(buf, sizeof buf, f) != nullptr) out += buf;
  pclose(f);
  return out;
}

void write_file(const fs::path& p, const std::string& data, fs::perms mode) {
  std::ofstream(p) << data;
  fs::permissions(p, mode);
}

using korovod::test_support::free_port;

// The ssh-auth volume's files (id_rsa, id_rsa.pub, authorized_keys) in a temporary dir.
struct MountedSecret {
  fs::path dir;
  SshKeyPair keys;
  MountedSecret() {
    dir = fs::temp_directory_path() / ("korovod-ssh-" + std::to_string(getpid()));
    fs::create_directories(dir);
    MPIJob job(testing::pi_job());
    apply_defaults(job);
    keys = OpenSslKeyGenerator().generate();
    const kube::Object secret = build_ssh_secret(job, keys);
    const std::string priv = base64_decode(secret["data"]["ssh-privatekey"].get<std::string>());
    const std::string pub = base64_decode(secret["data"]["ssh-publickey"].get<std::string>());
    const auto mode = fs::perms::owner_read | fs::perms::owner_write;  // defaultMode 0600
    write_file(dir / "id_rsa", priv, mode);
    write_file(dir / "id_rsa.pub", pub, mode);
    write_file(dir / "authorized_keys", pub, mode);
  }
  ~MountedSecret() {
    std::error_code ignored;  // never throw from a destructor
    fs::remove_all(dir, ignored);
  }
};

TEST(SshKeys, FormatsMatchMpiOperator) {
  SshKeyPair k = OpenSslKeyGenerator().generate();
  EXPECT_EQ(k.private_key_pem.rfind("-----BEGIN EC PRIVATE KEY-----\n", 0), 0u) << k.private_key_pem;
  EXPECT_EQ(k.authorized_key.rfind("ecdsa-sha2-nistp521 AAAA", 0), 0u) << k.authorized_key;
  EXPECT_EQ(k.authorized_key.back(), '\n');
  EXPECT_NE(k.authorized_key, OpenSslKeyGenerator().generate().authorized_key);
}

TEST(SshKeys, Base64RoundTrip) {
  for (std::string s : {"", "a", "ab", "abc", "abcd"}) EXPECT_EQ(base64_decode(base64_encode(s)), s);
}

TEST(SshKeys, SshKeygenDerivesTheSamePublicKey) {
  if (!fs::exists("/usr/bin/ssh-keygen")) GTEST_SKIP() << "ssh-keygen not installed";
  MountedSecret m;
  std::string derived = run("ssh-keygen -y -f " + (m.dir / "id_rsa").string());
  EXPECT_EQ(derived, m.keys.authorized_key);
}

TEST(SshKeys, SshdAcceptsTheKeyAsHostKeyAndForLogin) {
  if (!fs::exists("/usr/sbin/sshd")) GTEST_SKIP() << "/usr/sbin/sshd is missing (apt install openssh-server)";
  // A root sshd refuses to start without its privilege-separation directory. /run is a tmpfs,
  // so on a fresh boot nothing has made it yet: this test makes what it needs (Debian's sshd
  // service would, via its unit's RuntimeDirectory).
  if (getuid() == 0) {
    fs::create_directories("/run/sshd");
    fs::permissions("/run/sshd", fs::perms(0755));
  }
  MountedSecret m;
  const int port = free_port();
  const fs::path cfg = m.dir / "sshd_config", pid = m.dir / "sshd.pid";
  std::ofstream(cfg) << "Port " << port << "\nListenAddress 127.0.0.1\nHostKey "
                     << (m.dir / "id_rsa").string() << "\nAuthorizedKeysFile "
                     << (m.dir / "authorized_keys").string()
                     << "\nPidFile " << pid.string()
                     << "\nStrictModes no\nUsePAM no\nPermitRootLogin prohibit-password\n";
  ASSERT_EQ(run("/usr/sbin/sshd -t -f " + cfg.string()), "");
  ASSERT_EQ(std::system(("/usr/sbin/sshd -f " + cfg.string()).c_str()), 0);
  // sshd returns once it has daemonized, before its child listens; the child writes the pid file
  // after it listens. Connecting earlier was refused on a loaded machine (a fresh machine's CI).
  for (int i = 0; i < 1000 && !(fs::exists(pid) && fs::file_size(pid) > 0); ++i) usleep(10'000);
  ASSERT_TRUE(fs::exists(pid)) << "sshd did not write " << pid << " within 10 s";
  const std::string user = getuid() == 0 ? "root" : std::string(getenv("USER") ? getenv("USER") : "");
  std::string out = run("ssh -i " + (m.dir / "id_rsa").string() + " -p " + std::to_string(port) +
                        " -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
                        " -o BatchMode=yes -o LogLevel=ERROR " + user + "@127.0.0.1 echo ok");
  std::string sshd_pid;
  std::ifstream(pid) >> sshd_pid;
  if (!sshd_pid.empty()) {
    // sshd deletes its pid file as it exits: wait until it is gone before the directory goes.
    const pid_t daemon = std::stoi(sshd_pid);
    kill(daemon, SIGTERM);
    for (int i = 0; i < 250 && kill(daemon, 0) == 0; ++i) usleep(20'000);
  }
  EXPECT_EQ(out, "ok\n");
}

}  // namespace
}  // namespace mpijob
