// korovod's job security objects: the job secret (a key of the <job>-ssh Secret, its read-only
// mount and the env var naming the file in the launcher and the workers) and the per-job
// NetworkPolicy (modes, annotation, selectors, owner, scraper, plan steps).
#include <gtest/gtest.h>

#include <set>

#include "kube/clock.h"
#include "kube/object_meta.h"
#include "mpijob/builders.h"
#include "mpijob/defaults.h"
#include "mpijob/plan.h"
#include "mpijob/testing/fixtures.h"

namespace mpijob {
namespace {

using testing::pi_job;

MPIJob defaulted(kube::Object obj) {
  MPIJob job(std::move(obj));
  apply_defaults(job);
  return job;
}

const kube::Object* find_named(const kube::Object& list, const std::string& name) {
  for (const auto& item : list) {
    if (item.value("name", "") == name) return &item;
  }
  return nullptr;
}

// The secret's volume, mount and env on a pod spec's first container; the value nowhere.
void expect_job_secret_wiring(const kube::Object& spec, const std::string& what) {
  SCOPED_TRACE(what);
  const kube::Object* volume = find_named(spec["volumes"], kJobSecretVolume);
  ASSERT_NE(volume, nullptr) << spec.dump(2);
  EXPECT_EQ((*volume)["secret"]["secretName"], "pi-ssh");
  EXPECT_EQ((*volume)["secret"]["items"],
            kube::Object::array({{{"key", "korovod-job-secret"}, {"path", "secret"}}}))
      << "only the job secret, not the SSH keys";
  EXPECT_EQ((*volume)["secret"]["defaultMode"], 0444);
  const kube::Object& c = spec["containers"][0];
  const kube::Object* mount = find_named(c["volumeMounts"], kJobSecretVolume);
  ASSERT_NE(mount, nullptr);
  EXPECT_EQ((*mount)["mountPath"], "/etc/korovod/job-secret");
  EXPECT_EQ((*mount)["readOnly"], true);
  const kube::Object* env = find_named(c["env"], "KOROVOD_JOB_SECRET_FILE");
  ASSERT_NE(env, nullptr);
  EXPECT_EQ((*env)["value"], "/etc/korovod/job-secret/secret");
  EXPECT_EQ(spec.dump().find("fake-job-secret"), std::string::npos) << "the value is never in a pod spec";
}

TEST(JobSecret, IsAKeyOfTheSshSecret) {
  testing::FixedKeyGenerator keys;
  const kube::Object secret = build_ssh_secret(defaulted(pi_job()), keys.generate());
  EXPECT_EQ(secret["metadata"]["name"], "pi-ssh");
  EXPECT_EQ(base64_decode(secret["data"]["korovod-job-secret"].get<std::string>()),
            "fake-job-secret-0123456789abcdef");
  EXPECT_TRUE(secret["data"].contains("ssh-privatekey") && secret["data"].contains("ssh-publickey"));
}

TEST(JobSecret, MountedReadOnlyWithItsFileNamedInLauncherAndWorkers) {
  const MPIJob job = defaulted(pi_job(2));
  expect_job_secret_wiring(build_launcher_job(job, {})["spec"]["template"]["spec"], "launcher");
  for (int i = 0; i < 2; ++i) expect_job_secret_wiring(build_worker_pod(job, i, {})["spec"], "worker");
}

TEST(JobSecret, ContainerThatSetsItsOwnSecretKeepsIt) {
  kube::Object obj = pi_job(1);
  obj["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["env"] = {
      {{"name", "KOROVOD_JOB_SECRET_FILE"}, {"value", "/mine"}}};
  const kube::Object pod = build_worker_pod(defaulted(obj), 0, {});
  EXPECT_EQ(find_named(pod["spec"]["volumes"], kJobSecretVolume), nullptr);
  int count = 0;
  for (const auto& e : pod["spec"]["containers"][0]["env"]) count += e["name"] == "KOROVOD_JOB_SECRET_FILE";
  EXPECT_EQ(count, 1);
}

TEST(JobSecret, GeneratedFreshAsHexWithTheSshKeys) {
  OpenSslKeyGenerator gen;
  const SshKeyPair a = gen.generate(), b = gen.generate();
  EXPECT_EQ(a.job_secret.size(), 64u);
  EXPECT_EQ(a.job_secret.find_first_not_of("0123456789abcdef"), std::string::npos) << a.job_secret;
  EXPECT_NE(a.job_secret, b.job_secret);
}

struct PlanCase {
  kube::Object job = pi_job();
  Observed observed;
  BuildOptions opts;
  testing::FixedKeyGenerator keys;
  Plan run() { return plan(job, observed, opts, keys, kube::parse_time("2026-01-01T02:00:00Z")); }
  void observe_created() {
    MPIJob j = defaulted(job);
    auto owned = [](kube::Object o) {
      o["metadata"]["uid"] = "uid-" + o["metadata"]["name"].get<std::string>();
      return o;
    };
    observed.service = owned(build_service(j));
    observed.config_map = owned(build_config_map(j, {}, opts));
    observed.secret = owned(build_ssh_secret(j, keys.generate()));
    keys.calls = 0;
  }
};

std::vector<std::string> summary(const Plan& p) {
  std::vector<std::string> out;
  const char* verbs[] = {"create", "update", "update-status", "delete"};
  for (const auto& a : p.actions) {
    out.push_back(std::string(verbs[static_cast<int>(a.verb)]) + " " + a.resource.resource + "/" +
                  kube::name_of(a.object));
  }
  return out;
}

const Action* find_action(const Plan& p, const std::string& resource) {
  for (const auto& a : p.actions) {
    if (a.resource.resource == resource) return &a;
  }
  return nullptr;
}

TEST(JobSecret, SecretOfAnOlderOperatorGetsTheJobSecretAndKeepsItsSshKeys) {
  PlanCase c;
  c.observe_created();
  (*c.observed.secret)["data"].erase("korovod-job-secret");
  (*c.observed.secret)["data"]["ssh-privatekey"] = "T0xE";  // "OLD": must survive
  const Plan p = c.run();
  const Action* a = find_action(p, "secrets");
  ASSERT_NE(a, nullptr) << ::testing::PrintToString(summary(p));
  EXPECT_EQ(a->verb, Action::Verb::Update);
  EXPECT_EQ(a->object["data"]["ssh-privatekey"], "T0xE");
  EXPECT_EQ(base64_decode(a->object["data"]["korovod-job-secret"].get<std::string>()),
            "fake-job-secret-0123456789abcdef");
  c.observe_created();
  EXPECT_EQ(find_action(c.run(), "secrets"), nullptr) << "a complete Secret is left alone";
}

TEST(NetworkPolicy, ModesAndTheAnnotation) {
  NetworkPolicyOptions o;
  kube::Object obj = pi_job();
  auto wants = [&](const std::string& annotation) {
    kube::Object j = obj;
    if (!annotation.empty()) j["metadata"]["annotations"][kAnnotationNetworkPolicy] = annotation;
    return wants_network_policy(defaulted(j), o);
  };
  o.mode = NetworkPolicyMode::Off;
  EXPECT_FALSE(wants("") || wants("true"));
  o.mode = NetworkPolicyMode::OptIn;
  EXPECT_FALSE(wants(""));
  EXPECT_TRUE(wants("true"));
  EXPECT_FALSE(wants("false"));
  o.mode = NetworkPolicyMode::On;
  EXPECT_TRUE(wants(""));
  EXPECT_TRUE(wants("true"));
  EXPECT_FALSE(wants("false"));
  EXPECT_THROW(wants("yes"), std::invalid_argument);
  EXPECT_EQ(parse_network_policy_mode("opt-in"), NetworkPolicyMode::OptIn);
  EXPECT_THROW(parse_network_policy_mode("maybe"), std::invalid_argument);
  EXPECT_EQ(parse_match_labels("app=prom,team=x"), (std::map<std::string, std::string>{{"app", "prom"}, {"team", "x"}}));
  EXPECT_THROW(parse_match_labels("app"), std::invalid_argument);
}

TEST(NetworkPolicy, LetsInOnlyTheJobsPodsAndTheScraper) {
  const MPIJob job = defaulted(pi_job());
  NetworkPolicyOptions o;
  o.mode = NetworkPolicyMode::On;
  kube::Object np = build_network_policy(job, o);
  EXPECT_EQ(np["apiVersion"], "networking.k8s.io/v1");
  EXPECT_EQ(np["metadata"]["name"], "pi-netpol");
  EXPECT_EQ(np["metadata"]["ownerReferences"], kube::Object::array({owner_reference(job)}));
  const kube::Object selector = {{"matchLabels",
                                  {{"training.kubeflow.org/job-name", "pi"},
                                   {"training.kubeflow.org/operator-name", "mpi-operator"}}}};
  EXPECT_EQ(np["spec"]["podSelector"], selector);
  EXPECT_EQ(np["spec"]["policyTypes"], kube::Object::array({"Ingress"}));
  EXPECT_EQ(np["spec"]["ingress"], kube::Object::array({{{"from", kube::Object::array({{{"podSelector", selector}}})}}}));
  // Every pod the job creates carries the labels the selector names.
  for (const auto& labels : {build_worker_pod(job, 0, {})["metadata"]["labels"],
                             build_launcher_job(job, {})["spec"]["template"]["metadata"]["labels"]}) {
    for (const auto& [k, v] : selector["matchLabels"].items()) EXPECT_EQ(labels[k], v) << k;
  }
  o.scraper_namespace = "monitoring";
  o.scraper_labels = {{"app", "prometheus"}};
  np = build_network_policy(job, o);
  ASSERT_EQ(np["spec"]["ingress"].size(), 2u);
  EXPECT_EQ(np["spec"]["ingress"][1]["from"][0],
            kube::Object({{"namespaceSelector", {{"matchLabels", {{"kubernetes.io/metadata.name", "monitoring"}}}}},
                          {"podSelector", {{"matchLabels", {{"app", "prometheus"}}}}}}));
}

TEST(NetworkPolicy, PlanCreatesItBeforeThePodsAndDeletesItWhenOptedOut) {
  PlanCase c;
  c.opts.network_policy.mode = NetworkPolicyMode::OptIn;
  c.job["metadata"]["annotations"][kAnnotationNetworkPolicy] = "true";
  std::vector<std::string> s = summary(c.run());
  auto at = [&](const std::string& what) { return std::find(s.begin(), s.end(), what) - s.begin(); };
  ASSERT_LT(at("create networkpolicies/pi-netpol"), static_cast<long>(s.size())) << ::testing::PrintToString(s);
  EXPECT_LT(at("create networkpolicies/pi-netpol"), at("create pods/pi-worker-0"));

  kube::Object np = build_network_policy(defaulted(c.job), c.opts.network_policy);
  np["metadata"]["uid"] = "np-uid";
  c.observed.network_policy = np;
  s = summary(c.run());
  EXPECT_EQ(at("create networkpolicies/pi-netpol"), static_cast<long>(s.size())) << "exists: nothing to do";
  c.job["metadata"]["annotations"][kAnnotationNetworkPolicy] = "false";
  s = summary(c.run());
  EXPECT_LT(at("delete networkpolicies/pi-netpol"), static_cast<long>(s.size())) << ::testing::PrintToString(s);
}

TEST(NetworkPolicy, SomeoneElsesPolicyOfThatNameStopsTheSync) {
  PlanCase c;
  c.opts.network_policy.mode = NetworkPolicyMode::On;
  c.observe_created();
  c.observed.network_policy = kube::Object{{"metadata", {{"name", "pi-netpol"}, {"uid", "x"}}}, {"spec", {}}};
  const Plan p = c.run();
  ASSERT_TRUE(p.error);
  EXPECT_NE(p.error->find("\"pi-netpol\" of Kind \"NetworkPolicy\""), std::string::npos) << *p.error;
}

TEST(NetworkPolicy, BadAnnotationFailsTheJobAsInvalid) {
  PlanCase c;
  c.opts.network_policy.mode = NetworkPolicyMode::OptIn;
  c.job["metadata"]["annotations"][kAnnotationNetworkPolicy] = "yes";
  const Plan p = c.run();
  ASSERT_TRUE(p.status);
  bool failed = false;
  for (const auto& cond : (*p.status)["conditions"]) {
    failed = failed || (cond["type"] == "Failed" &&
                        cond["message"].get<std::string>().find("korovod.io/network-policy") != std::string::npos);
  }
  EXPECT_TRUE(failed) << p.status->dump(2);
}

}  // namespace
}  // namespace mpijob
