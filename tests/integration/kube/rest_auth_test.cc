// Authentication and TLS against the real API server: the CA is verified by default, a wrong
// CA or a wrong token fails with a clear error, client certificates and token files work.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cluster.h"
#include "kube/api_error.h"

namespace kube::testing {
namespace {

class RestAuthTest : public ::testing::Test {
 protected:
  void SetUp() override { REQUIRE_CLUSTER(); }
  static void expect_can_list_namespaces(const Config& config) {
    RestClient c(config, fast_options());
    EXPECT_FALSE(c.list(resources::kNamespaces, "", {}).items.empty());
  }
};

TEST_F(RestAuthTest, TheClusterCaVerifiesTheServer) {
  const Config config = cluster_config();
  ASSERT_FALSE(config.ca_pem.empty());
  ASSERT_FALSE(config.insecure_skip_tls_verify);
  expect_can_list_namespaces(config);
}

TEST_F(RestAuthTest, AWrongCaIsRefusedAsUnknownAuthority) {
  Config config = cluster_config();
  config.ca_pem = throwaway_ca_pem();
  RestClient c(config, fast_options());
  try {
    c.get(resources::kNamespaces, "", "default");
    ADD_FAILURE() << "a server signed by another CA was trusted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.code(), 0);
    EXPECT_EQ(e.reason(), "TLSVerificationFailed");
    EXPECT_NE(std::string(e.what()).find("x509: certificate signed by unknown authority"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(RestAuthTest, WithoutACaTheSystemStoreDoesNotTrustTheTestCluster) {
  Config config = cluster_config();
  config.ca_pem.clear();
  RestClient c(config, fast_options());
  try {
    c.get(resources::kNamespaces, "", "default");
    ADD_FAILURE() << "verification is off by default";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.reason(), "TLSVerificationFailed") << e.what();
  }
}

TEST_F(RestAuthTest, InsecureSkipVerifyConnectsWithoutTheCa) {
  Config config = cluster_config();
  config.ca_pem.clear();
  config.insecure_skip_tls_verify = true;
  expect_can_list_namespaces(config);
}

TEST_F(RestAuthTest, AWrongTokenIsUnauthorized) {
  Config config = cluster_config();
  config.token = "not-the-token";
  RestClient c(config, fast_options());
  try {
    c.list(resources::kNamespaces, "", {});
    ADD_FAILURE() << "a wrong token was accepted";
  } catch (const ApiError& e) {
    EXPECT_TRUE(is_unauthorized(e)) << e.what();
    EXPECT_EQ(e.reason(), "Unauthorized");
    EXPECT_NE(std::string(e.what()).find("401 Unauthorized"), std::string::npos) << e.what();
  }
}

TEST_F(RestAuthTest, ClientCertificateContextAuthenticates) {
  const std::string kubeconfig = (std::filesystem::path(cluster_dir()) / "kubeconfig").string();
  const Config config = load_kubeconfig(kubeconfig, "korovod-test-cert");
  ASSERT_FALSE(config.client_cert_pem.empty());
  ASSERT_TRUE(config.token.empty());
  expect_can_list_namespaces(config);
}

TEST_F(RestAuthTest, TokenFileIsReadForEachRequest) {
  Config config = cluster_config();
  const std::string good = config.token;
  const std::string file =
      (std::filesystem::temp_directory_path() / ("korovod-token-" + std::to_string(::getpid())))
          .string();
  std::ofstream(file) << good << "\n";
  config.token.clear();
  config.token_file = file;
  RestClient c(config, fast_options());
  EXPECT_NO_THROW(c.list(resources::kNamespaces, "", {}));
  // Rotating to a bad token shows up on the next request (mtime changes).
  std::ofstream(file) << "rotated-bad-token\n";
  std::filesystem::last_write_time(file, std::filesystem::last_write_time(file) +
                                             std::chrono::seconds(5));
  try {
    c.list(resources::kNamespaces, "", {});
    ADD_FAILURE() << "the rotated token was not used";
  } catch (const ApiError& e) {
    EXPECT_TRUE(is_unauthorized(e)) << e.what();
  }
  std::filesystem::remove(file);
}

TEST_F(RestAuthTest, ServerInfoThroughRawGet) {
  RestClient c(cluster_config(), fast_options());
  const Object version = c.raw_get("/version");
  EXPECT_EQ(version["major"], "1");
  EXPECT_EQ(c.raw_get("/readyz"), Object("ok"));
}

}  // namespace
}  // namespace kube::testing
