#include "kube/config.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "kube/fake_clock.h"

namespace kube {
namespace {
namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "kube_config_test_XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string write(const std::string& name, const std::string& text) const {
    const fs::path p = path_ / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

ConfigEnvironment env_from(std::map<std::string, std::string> vars, std::string sa_dir = "/nonexistent") {
  ConfigEnvironment env;
  env.getenv = [vars](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
  env.service_account_dir = std::move(sa_dir);
  return env;
}

const char* kKubeconfig = R"(apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: other
  cluster:
    server: https://other:6443
- name: local
  cluster:
    server: https://127.0.0.1:6443/
    certificate-authority: pki/ca.crt
contexts:
- name: dev
  context:
    cluster: local
    user: admin
    namespace: team-a
- name: prod
  context:
    cluster: other
    user: robot
users:
- name: admin
  user:
    client-certificate-data: Q0VSVA==
    client-key-data: S0VZ
- name: robot
  user:
    token: s3cret
)";

TEST(KubeconfigTest, ReadsCurrentContextWithRelativePathsAndInlineData) {
  TempDir dir;
  dir.write("pki/ca.crt", "CA PEM");
  const Config c = load_kubeconfig(dir.write("kubeconfig", kKubeconfig));
  EXPECT_EQ(c.server, "https://127.0.0.1:6443");
  EXPECT_EQ(c.ca_pem, "CA PEM");
  EXPECT_EQ(c.client_cert_pem, "CERT");
  EXPECT_EQ(c.client_key_pem, "KEY");
  EXPECT_EQ(c.namespace_, "team-a");
  EXPECT_FALSE(c.insecure_skip_tls_verify);
}

TEST(KubeconfigTest, NamedContextOverridesCurrentAndDefaultsNamespace) {
  TempDir dir;
  dir.write("pki/ca.crt", "CA PEM");
  const Config c = load_kubeconfig(dir.write("kubeconfig", kKubeconfig), "prod");
  EXPECT_EQ(c.server, "https://other:6443");
  EXPECT_EQ(c.token, "s3cret");
  EXPECT_EQ(c.namespace_, "default");
}

TEST(KubeconfigTest, TokenFileAndInsecureFlag) {
  TempDir dir;
  const std::string path = dir.write("kubeconfig", R"(
current-context: c
clusters: [{name: k, cluster: {server: "https://h:1", insecure-skip-tls-verify: true}}]
contexts: [{name: c, context: {cluster: k, user: u}}]
users: [{name: u, user: {tokenFile: tok}}]
)");
  const Config c = load_kubeconfig(path);
  EXPECT_TRUE(c.insecure_skip_tls_verify);
  EXPECT_EQ(c.token_file, (dir.path() / "tok").string());
}

void expect_error(const std::string& yaml, const std::string& expected_suffix) {
  TempDir dir;
  const std::string path = dir.write("kc", yaml);
  try {
    load_kubeconfig(path);
    ADD_FAILURE() << "no error for:\n" << yaml;
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "kubeconfig " + path + ": " + expected_suffix);
  }
}

TEST(KubeconfigTest, MalformedFilesNameTheFileAndField) {
  expect_error("current-context: c\ncontexts: [{name: c, context: {user: u}}]\n",
               "contexts[0].context.cluster: missing");
  expect_error("contexts: []\n", "current-context: missing");
  expect_error("current-context: x\ncontexts: [{name: c, context: {cluster: k}}]\n",
               "current-context: context \"x\" not found in contexts");
  expect_error(
      "current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
      "clusters: [{name: k, cluster: {certificate-authority-data: QQ==}}]\n",
      "clusters[0].cluster.server: missing");
}

TEST(KubeconfigTest, UnreadableCertificateFileNamesFieldAndResolvedPath) {
  TempDir dir;
  const std::string path = dir.write(
      "kc",
      "current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
      "clusters: [{name: k, cluster: {server: s, certificate-authority: nope.crt}}]\n");
  try {
    load_kubeconfig(path);
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "kubeconfig " + path +
                                         ": clusters[0].cluster.certificate-authority: cannot read " +
                                         (dir.path() / "nope.crt").string());
  }
}

TEST(KubeconfigTest, NotYamlIsReported) {
  TempDir dir;
  const std::string path = dir.write("kc", "a: [unclosed\n");
  EXPECT_THROW(
      {
        try {
          load_kubeconfig(path);
        } catch (const ConfigError& e) {
          EXPECT_NE(std::string(e.what()).find("kubeconfig " + path + ": not valid YAML"),
                    std::string::npos);
          throw;
        }
      },
      ConfigError);
}

TEST(InClusterTest, ReadsServiceAccountAndServiceEnv) {
  TempDir dir;
  dir.write("sa/token", "tok\n");
  dir.write("sa/ca.crt", "CA");
  dir.write("sa/namespace", "jobs\n");
  const auto env = env_from({{"KUBERNETES_SERVICE_HOST", "10.0.0.1"},
                             {"KUBERNETES_SERVICE_PORT", "443"}},
                            (dir.path() / "sa").string());
  const auto c = load_in_cluster(env);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->server, "https://10.0.0.1:443");
  EXPECT_EQ(c->ca_pem, "CA");
  EXPECT_EQ(c->namespace_, "jobs");
  EXPECT_EQ(c->token_file, (dir.path() / "sa" / "token").string());
  EXPECT_TRUE(c->token.empty());
}

TEST(InClusterTest, Ipv6HostIsBracketedAndNoEnvMeansNotInCluster) {
  TempDir dir;
  dir.write("sa/token", "t");
  dir.write("sa/ca.crt", "CA");
  const auto c = load_in_cluster(env_from(
      {{"KUBERNETES_SERVICE_HOST", "fd00::1"}, {"KUBERNETES_SERVICE_PORT", "443"}},
      (dir.path() / "sa").string()));
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->server, "https://[fd00::1]:443");
  EXPECT_EQ(c->namespace_, "default");
  EXPECT_FALSE(load_in_cluster(env_from({})).has_value());
}

TEST(LoadConfigTest, PrecedenceFlagThenEnvThenInClusterThenHome) {
  TempDir dir;
  const auto kc = [&](const std::string& name, const std::string& server) {
    return dir.write(name, "current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
                           "clusters: [{name: k, cluster: {server: " + server + "}}]\n");
  };
  const std::string flag = kc("flag", "https://flag");
  const std::string envfile = kc("env", "https://env");
  kc("home/.kube/config", "https://home");
  dir.write("sa/token", "t");
  dir.write("sa/ca.crt", "CA");
  const std::string sa = (dir.path() / "sa").string();
  const std::string home = (dir.path() / "home").string();
  std::map<std::string, std::string> vars = {{"KUBECONFIG", "/missing:" + envfile},
                                             {"KUBERNETES_SERVICE_HOST", "in"},
                                             {"KUBERNETES_SERVICE_PORT", "1"},
                                             {"HOME", home}};
  EXPECT_EQ(load_config(flag, env_from(vars, sa)).server, "https://flag");
  EXPECT_EQ(load_config("", env_from(vars, sa)).server, "https://env");
  vars.erase("KUBECONFIG");
  EXPECT_EQ(load_config("", env_from(vars, sa)).server, "https://in:1");
  vars.erase("KUBERNETES_SERVICE_HOST");
  EXPECT_EQ(load_config("", env_from(vars, sa)).server, "https://home");
  vars.erase("HOME");
  EXPECT_THROW(load_config("", env_from(vars, sa)), ConfigError);
}

// kubectl's merge of a KUBECONFIG list: current-context from the first file that sets one;
// each context / cluster / user from the first file that names it; relative paths against the
// file the entry is in; missing files skipped; an error names the whole list.
TEST(LoadConfigTest, KubeconfigListIsMergedAsKubectlDoes) {
  TempDir dir;
  dir.write("a/ca.crt", "CA-A");
  dir.write("b/token", "tok-b");
  // a: the current context, its cluster (with a CA file relative to a/), a shadowed user.
  const std::string a = dir.write("a/config",
      "current-context: dev\n"
      "contexts: [{name: dev, context: {cluster: k, user: u, namespace: team}}]\n"
      "clusters: [{name: k, cluster: {server: https://a/, certificate-authority: ca.crt}}]\n");
  // b: another current-context (ignored: a set one), the user (token file relative to b/),
  // and a cluster named k too (ignored: a named it first).
  const std::string b = dir.write("b/config",
      "current-context: other\n"
      "contexts: [{name: other, context: {cluster: k}}]\n"
      "clusters: [{name: k, cluster: {server: https://b}}]\n"
      "users: [{name: u, user: {tokenFile: token}}]\n");
  const std::string empty = dir.write("c/empty", "");
  std::map<std::string, std::string> vars = {{"KUBECONFIG", a + ":/missing:" + empty + ":" + b}};
  const Config c = load_config("", env_from(vars, (dir.path() / "sa").string()));
  EXPECT_EQ(c.server, "https://a");
  EXPECT_EQ(c.ca_pem, "CA-A");
  EXPECT_EQ(c.namespace_, "team");
  EXPECT_EQ(c.token_file, (dir.path() / "b" / "token").string());

  // The other order: b's current-context and cluster win.
  vars["KUBECONFIG"] = b + ":" + a;
  EXPECT_EQ(load_config("", env_from(vars, (dir.path() / "sa").string())).server, "https://b");

  // A user no file defines: the error names the list and the field that refers to it.
  const std::string lone = dir.write("d/config",
      "current-context: x\ncontexts: [{name: x, context: {cluster: k, user: nobody}}]\n");
  vars["KUBECONFIG"] = lone + ":" + a;
  try {
    load_config("", env_from(vars, (dir.path() / "sa").string()));
    FAIL() << "no error for a user that no file defines";
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("KUBECONFIG=" + lone + ":" + a), std::string::npos) << m;
    EXPECT_NE(m.find("contexts[0].context.user: user \"nobody\" not found in users"), std::string::npos) << m;
  }
}

TEST(TokenSourceTest, StaticTokenWithoutFile) {
  FakeClock clock;
  Config c;
  c.token = "abc";
  TokenSource ts(c, clock);
  EXPECT_EQ(ts.token(), "abc");
}

TEST(TokenSourceTest, RereadsWhenFileChangesOrAfterAMinute) {
  TempDir dir;
  FakeClock clock;
  Config c;
  c.token_file = dir.write("token", "one\n");
  TokenSource ts(c, clock);
  EXPECT_EQ(ts.token(), "one");

  // A rotation that changes the mtime is seen at once.
  dir.write("token", "two");
  timespec times[2] = {{0, UTIME_OMIT}, {1'000'000, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, c.token_file.c_str(), times, 0), 0);
  EXPECT_EQ(ts.token(), "two");

  // One that keeps the mtime is seen after a minute.
  dir.write("token", "three");
  ASSERT_EQ(::utimensat(AT_FDCWD, c.token_file.c_str(), times, 0), 0);
  EXPECT_EQ(ts.token(), "two");
  clock.advance(std::chrono::seconds(61));
  EXPECT_EQ(ts.token(), "three");
}

TEST(Base64Test, DecodesPaddedAndWrapped) {
  EXPECT_EQ(base64_decode("aGVsbG8gd29ybGQ="), "hello world");
  EXPECT_EQ(base64_decode("aGVs\nbG8="), "hello");
  EXPECT_THROW(base64_decode("a*b"), std::invalid_argument);
}

}  // namespace
}  // namespace kube
