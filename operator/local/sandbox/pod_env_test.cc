#include "local/sandbox/pod_env.h"

#include <gtest/gtest.h>

#include "kube/memory_client.h"

namespace local {
namespace {

kube::Object test_pod() {
  return kube::Object::parse(R"({
    "metadata": {"name": "pi-worker-0", "namespace": "ns1", "uid": "u1",
                 "labels": {"app": "pi"}, "annotations": {"a": "b"}},
    "spec": {"nodeName": "n1", "serviceAccountName": "sa"},
    "status": {"podIP": "127.0.0.1"}})");
}

class PodEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client.create(kube::resources::kConfigMaps, "ns1",
                  {{"metadata", {{"name", "cm"}}}, {"data", {{"k", "from-cm"}, {"x", "1"}}}});
    // "c2VjcmV0" = base64("secret")
    client.create(kube::resources::kSecrets, "ns1",
                  {{"metadata", {{"name", "s"}}}, {"data", {{"pw", "c2VjcmV0"}}}});
  }
  kube::MemoryClient client;
};

TEST_F(PodEnvTest, ResolvesValuesFieldRefsAndKeyRefsInOrder) {
  auto container = kube::Object::parse(R"js({"env": [
    {"name": "A", "value": "a"},
    {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
    {"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
    {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
    {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
    {"name": "CM", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}},
    {"name": "PW", "valueFrom": {"secretKeyRef": {"name": "s", "key": "pw"}}},
    {"name": "REF", "value": "$(A)-$(POD)-$(NOPE)-$$(A)"}]})js");
  auto env = resolve_container_env(test_pod(), container, client_env_sources(client, "ns1"));
  EXPECT_EQ(get_env(env, "A"), "a");
  EXPECT_EQ(get_env(env, "POD"), "pi-worker-0");
  EXPECT_EQ(get_env(env, "NS"), "ns1");
  EXPECT_EQ(get_env(env, "IP"), "127.0.0.1");
  EXPECT_EQ(get_env(env, "APP"), "pi");
  EXPECT_EQ(get_env(env, "CM"), "from-cm");
  EXPECT_EQ(get_env(env, "PW"), "secret");
  EXPECT_EQ(get_env(env, "REF"), "a-pi-worker-0-$(NOPE)-$(A)");
  EXPECT_EQ(env.front().first, "A");
}

TEST_F(PodEnvTest, EnvFromAddsPrefixedKeysAndEnvOverrides) {
  auto container = kube::Object::parse(R"({
    "envFrom": [{"configMapRef": {"name": "cm"}, "prefix": "P_"}],
    "env": [{"name": "P_x", "value": "override"}]})");
  auto env = resolve_container_env(test_pod(), container, client_env_sources(client, "ns1"));
  EXPECT_EQ(get_env(env, "P_k"), "from-cm");
  EXPECT_EQ(get_env(env, "P_x"), "override");
}

TEST_F(PodEnvTest, MissingRequiredKeyThrowsAndOptionalIsSkipped) {
  auto required = kube::Object::parse(
      R"({"env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "nope"}}}]})");
  EXPECT_THROW(resolve_container_env(test_pod(), required, client_env_sources(client, "ns1")),
               std::runtime_error);
  auto optional = kube::Object::parse(R"({"env": [{"name": "X", "valueFrom":
      {"secretKeyRef": {"name": "absent", "key": "k", "optional": true}}}]})");
  auto env = resolve_container_env(test_pod(), optional, client_env_sources(client, "ns1"));
  EXPECT_FALSE(get_env(env, "X").has_value());
}

TEST(PodField, UnsupportedPathThrows) {
  EXPECT_THROW(pod_field(test_pod(), "spec.nope"), std::invalid_argument);
  EXPECT_EQ(pod_field(test_pod(), "metadata.annotations['a']"), "b");
  EXPECT_EQ(pod_field(test_pod(), "spec.nodeName"), "n1");
}

TEST(Base64, DecodesWithAndWithoutPadding) {
  EXPECT_EQ(base64_decode("aGVsbG8="), "hello");
  EXPECT_EQ(base64_decode("aGk"), "hi");
  EXPECT_EQ(base64_decode(""), "");
}

}  // namespace
}  // namespace local
