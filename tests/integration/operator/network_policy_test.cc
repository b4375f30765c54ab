// korovod's per-MPIJob NetworkPolicy and job secret on the real control plane. No CNI plugin runs
// in the test cluster (no kubelet, no pod network), so nothing here can show the policy being
// enforced: the tests check the objects the operator writes (selectors, owner reference, the
// scraper rule, deletion with the job by the garbage collector) and the secret's wiring.
#include <openssl/evp.h>

#include <thread>

#include "fixture.h"

namespace optest {
namespace {

using namespace std::chrono_literals;

const kube::Resource kNetworkPolicies{"networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", true};

class NetworkPolicy : public OperatorTest {
 protected:
  kube::Object create_annotated(const std::string& name, const std::string& annotation) {
    kube::Object job = mpijob({.name = name, .workers = 1});
    if (!annotation.empty()) job["metadata"]["annotations"]["korovod.io/network-policy"] = annotation;
    return c().create(kMPIJobs, ns(), job);
  }
  std::optional<kube::Object> policy(const std::string& job) {
    return try_get(c(), kNetworkPolicies, ns(), job + "-netpol");
  }
};

TEST_F(NetworkPolicy, OptInJobGetsAPolicyOwnedByItThatGoesWithIt) {
  start_operator({"--network-policy=opt-in", "--network-policy-scraper-namespace=monitoring",
                  "--network-policy-scraper-labels=app=prometheus"});
  const kube::Object job = create_annotated("guarded", "true");
  create_annotated("open", "");
  ASSERT_TRUE(wait_for([&] { return policy("guarded").has_value(); })) << "no NetworkPolicy guarded-netpol";
  ASSERT_TRUE(wait_for([&] { return worker_pods(c(), ns(), "open").size() == 1; }));
  EXPECT_FALSE(policy("open").has_value()) << "opt-in: a job without the annotation gets none";

  const kube::Object np = *policy("guarded");
  const kube::Object selector = {{"matchLabels",
                                  {{"training.kubeflow.org/job-name", "guarded"},
                                   {"training.kubeflow.org/operator-name", "mpi-operator"}}}};
  EXPECT_EQ(np["spec"]["podSelector"], selector);
  EXPECT_EQ(np["spec"]["policyTypes"], kube::Object::array({"Ingress"}));
  ASSERT_EQ(np["spec"]["ingress"].size(), 2u) << np.dump(2);
  EXPECT_EQ(np["spec"]["ingress"][0]["from"][0]["podSelector"], selector);
  EXPECT_EQ(np["spec"]["ingress"][1]["from"][0]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"],
            "monitoring");
  EXPECT_EQ(np["spec"]["ingress"][1]["from"][0]["podSelector"]["matchLabels"]["app"], "prometheus");
  const auto& refs = np["metadata"]["ownerReferences"];
  ASSERT_EQ(refs.size(), 1u);
  EXPECT_EQ(refs[0]["kind"], "MPIJob");
  EXPECT_EQ(refs[0]["uid"], kube::uid_of(job));
  EXPECT_EQ(refs[0]["controller"], true);
  // The pods the policy guards are the ones the operator made, with the labels it selects.
  ASSERT_TRUE(wait_for([&] { return worker_pods(c(), ns(), "guarded").size() == 1; }));
  const kube::Object worker = worker_pods(c(), ns(), "guarded")[0];
  for (const auto& [k, v] : selector["matchLabels"].items()) EXPECT_EQ(worker["metadata"]["labels"][k], v) << k;

  kube::DeleteOptions background;
  background.propagation_policy = "Background";
  c().remove(kMPIJobs, ns(), "guarded", background);
  EXPECT_TRUE(wait_for([&] { return !policy("guarded").has_value(); }, 60s))
      << "the garbage collector did not delete the policy with its job";
}

TEST_F(NetworkPolicy, OnModeCoversEveryJobUntilItOptsOut) {
  start_operator({"--network-policy=on"});
  create_annotated("every", "");
  ASSERT_TRUE(wait_for([&] { return policy("every").has_value(); }));
  EXPECT_EQ(policy("every")->at("spec").at("ingress").size(), 1u) << "no scraper configured: one rule";
  patch_job("every", R"({"metadata":{"annotations":{"korovod.io/network-policy":"false"}}})");
  EXPECT_TRUE(wait_for([&] { return !policy("every").has_value(); })) << "opting out deletes the policy";
}

TEST_F(NetworkPolicy, OffModeWritesNoneAndThePodsStillGetTheJobSecret) {
  start_operator();
  create_annotated("plain", "true");
  ASSERT_TRUE(wait_for([&] { return worker_pods(c(), ns(), "plain").size() == 1; }));
  std::this_thread::sleep_for(1s);
  EXPECT_FALSE(policy("plain").has_value());
  const kube::Object secret = c().get(kube::resources::kSecrets, ns(), "plain-ssh");
  ASSERT_TRUE(secret["data"].contains("korovod-job-secret")) << secret["data"].dump();
  EXPECT_EQ(secret["data"]["korovod-job-secret"].get<std::string>().size(), 88u) << "64 hex digits, base64";
  const kube::Object worker = worker_pods(c(), ns(), "plain")[0];
  const std::string spec = worker["spec"].dump();
  EXPECT_NE(spec.find("\"KOROVOD_JOB_SECRET_FILE\""), std::string::npos) << spec;
  EXPECT_NE(spec.find("/etc/korovod/job-secret"), std::string::npos) << spec;
  // The value never appears in a pod spec.
  const std::string b64 = secret["data"]["korovod-job-secret"].get<std::string>();
  std::string value(b64.size(), '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(value.data()),
                                reinterpret_cast<const unsigned char*>(b64.data()), static_cast<int>(b64.size()));
  ASSERT_GE(n, 64);
  value.resize(64);
  EXPECT_EQ(value.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(spec.find(value), std::string::npos);
}

}  // namespace
}  // namespace optest
