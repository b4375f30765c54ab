// The binary's edges: admission refuses invalid manifests (kubectl), the operator exits 1 with
// a clear message when the CRD is missing or RBAC is short, leader election on a Lease, /metrics,
// SIGTERM, and gang scheduling PodGroups for both schedulers.
#include <csignal>
#include <fstream>
#include <thread>

#include "fixture.h"
#include "free_port.h"
#include "kube/http_server.h"

namespace optest {
namespace {

using namespace std::chrono_literals;

class Startup : public OperatorTest {};

std::string manifest(const std::string& ns, const std::string& name, const std::string& spec_patch) {
  kube::Object j = mpijob({.name = name, .workers = 1});
  j["metadata"]["namespace"] = ns;
  j.merge_patch(kube::Object::parse(spec_patch));
  return j.dump();
}

TEST_F(Startup, InvalidManifestsAreRefusedByKubectlApplyNamingTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"spec":{"mpiImplementation":"OpenMPIX"}})", "spec.mpiImplementation"},
      {R"({"spec":{"slotsPerWorker":-1}})", "spec.slotsPerWorker"},
      {R"({"spec":{"runPolicy":{"cleanPodPolicy":"Sometimes"}}})", "spec.runPolicy.cleanPodPolicy"},
      {R"({"spec":{"runPolicy":{"backoffLimit":-2}}})", "spec.runPolicy.backoffLimit"},
      {R"({"spec":{"mpiReplicaSpecs":{"Launcher":{"replicas":2}}}})",
       "spec.mpiReplicaSpecs.Launcher.replicas"},
      {R"({"spec":{"mpiReplicaSpecs":{"Worker":{"restartPolicy":"Always"}}}})",
       "spec.mpiReplicaSpecs.Worker.restartPolicy"},
      {R"({"spec":{"launcherCreationPolicy":"Whenever"}})", "spec.launcherCreationPolicy"},
  };
  int i = 0;
  for (const auto& [patch, field] : cases) {
    auto r = kubectl({"apply", "-f", "-"}, manifest(ns(), "bad-" + std::to_string(i++), patch));
    EXPECT_NE(r.exit_code, 0) << patch;
    EXPECT_NE(r.output.find(field), std::string::npos) << patch << "\n" << r.output;
  }
  auto ok = kubectl({"apply", "-f", "-"}, manifest(ns(), "good", "{}"));
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
}

TEST_F(Startup, MissingCrdExitsOneWithAClearMessage) {
  // An API server without the CRD: every path is 404 NotFound, as the real one answers for an
  // unknown group/version.
  kube::HttpServer fake("127.0.0.1", 0);
  fake.handle("/apis/kubeflow.org/v2beta1/mpijobs", [](const kube::HttpRequest&) {
    kube::HttpResponse r;
    r.status = 404;
    r.content_type = "application/json";
    r.body = R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","code":404})";
    return r;
  });
  const uint16_t port = fake.start();
  const std::string kc = kube::testing::cluster_dir() + "/operator-logs/nocrd-kubeconfig";
  std::ofstream(kc) << "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n"
                       "    server: http://127.0.0.1:" << port << "\ncontexts:\n- name: c\n"
                       "  context: {cluster: c, user: u}\ncurrent-context: c\nusers:\n- name: u\n"
                       "  user: {token: t}\n";
  OperatorProcess op({"--kubeconfig=" + kc, "--leader-elect=false", "--health-port=0"}, "nocrd",
                     {"KUBECONFIG=" + kc});
  auto code = op.wait(20s);
  ASSERT_TRUE(code.has_value()) << op.log();
  EXPECT_EQ(*code, 1) << op.log();
  EXPECT_NE(op.log().find("MPIJob CRD is not installed"), std::string::npos) << op.log();
}

TEST_F(Startup, RbacShortfallExitsOneNamingVerbAndResource) {
  // A service account that may only list and watch MPIJobs.
  kube::Object sa = {{"metadata", {{"name", "weak"}}}};
  c().create(kube::resources::kServiceAccounts, ns(), sa);
  const kube::Resource roles{"rbac.authorization.k8s.io", "v1", "roles", "Role", true};
  const kube::Resource bindings{"rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding",
                                true};
  c().create(roles, ns(), {{"metadata", {{"name", "weak"}}},
                           {"rules", {{{"apiGroups", {"kubeflow.org"}},
                                       {"resources", {"mpijobs"}},
                                       {"verbs", {"list", "watch"}}}}}});
  c().create(bindings, ns(), {{"metadata", {{"name", "weak"}}},
                              {"roleRef", {{"apiGroup", "rbac.authorization.k8s.io"},
                                           {"kind", "Role"}, {"name", "weak"}}},
                              {"subjects", {{{"kind", "ServiceAccount"}, {"name", "weak"},
                                             {"namespace", ns()}}}}});
  auto tok = kubectl({"create", "token", "weak", "-n", ns()});
  ASSERT_EQ(tok.exit_code, 0) << tok.output;
  std::string token = tok.output;
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  const std::string kc = kube::testing::cluster_dir() + "/operator-logs/weak-kubeconfig-" + ns();
  auto cfg = kube::testing::cluster_config();
  std::ofstream(kc) << "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n"
                       "    server: " << cfg.server << "\n    insecure-skip-tls-verify: true\n"
                       "contexts:\n- name: c\n  context: {cluster: c, user: u}\n"
                       "current-context: c\nusers:\n- name: u\n  user: {token: " << token << "}\n";
  OperatorProcess op({"--namespace=" + ns(), "--leader-elect=false", "--health-port=0"}, "weak",
                     {"KUBECONFIG=" + kc});
  auto code = op.wait(30s);
  ASSERT_TRUE(code.has_value()) << op.log();
  EXPECT_EQ(*code, 1) << op.log();
  EXPECT_NE(op.log().find("create pods in namespace " + ns()), std::string::npos) << op.log();
}

using korovod::test_support::free_port;

TEST_F(Startup, LeaderElectionMetricsAndSigterm) {
  const uint16_t metrics = free_port(), health = free_port();
  OperatorProcess a({"--namespace=" + ns(), "--leader-elect=true", "--lock-namespace=" + ns(),
                     "--monitoring-port=" + std::to_string(metrics),
                     "--health-port=" + std::to_string(health), "--log-format=json"},
                    "leader-a");
  ASSERT_TRUE(wait_for([&] {
    auto l = try_get(c(), kube::resources::kLeases, ns(), "mpi-operator");
    return l && !(*l)["spec"].value("holderIdentity", "").empty();
  })) << a.log();
  const std::string holder =
      c().get(kube::resources::kLeases, ns(), "mpi-operator")["spec"]["holderIdentity"];
  OperatorProcess b({"--namespace=" + ns(), "--leader-elect=true", "--lock-namespace=" + ns(),
                     "--health-port=0"}, "leader-b");
  create({.name = "le", .workers = 1});
  ASSERT_TRUE(wait_for([&] { return has_condition(c(), ns(), "le", "Created"); })) << a.log();
  // The reconciler writes the Created condition, then records its events and counters: poll
  // the counter rather than reading it once right after the condition appears.
  CommandResult scrape;
  const bool counted = wait_for([&] {
    scrape = run_command({"curl", "-sf", "http://127.0.0.1:" + std::to_string(metrics) + "/metrics"});
    return scrape.output.find("mpi_operator_jobs_created_total 1") != std::string::npos;
  });
  EXPECT_TRUE(counted) << scrape.output;
  EXPECT_NE(scrape.output.find("mpi_operator_is_leader 1"), std::string::npos) << scrape.output;
  EXPECT_NE(scrape.output.find("mpi_operator_reconcile_duration_seconds_count"), std::string::npos);
  EXPECT_NE(scrape.output.find("mpi_operator_workqueue_depth"), std::string::npos);
  auto ready = run_command({"curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                            "http://127.0.0.1:" + std::to_string(health) + "/readyz"});
  EXPECT_EQ(ready.output, "200");
  // The standby does nothing while a leads.
  EXPECT_EQ(c().get(kube::resources::kLeases, ns(), "mpi-operator")["spec"]["holderIdentity"],
            holder);
  a.signal(SIGTERM);
  auto code = a.wait(15s);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0) << a.log();
  EXPECT_NE(a.log().find("released leader lease"), std::string::npos);
  // b takes over well before the 15 s lease would have expired.
  EXPECT_TRUE(wait_for([&] {
    auto h = c().get(kube::resources::kLeases, ns(), "mpi-operator")["spec"].value("holderIdentity", "");
    return !h.empty() && h != holder;
  }, 10s)) << b.log();
  create({.name = "le2", .workers = 1});
  EXPECT_TRUE(wait_for([&] { return has_condition(c(), ns(), "le2", "Created"); })) << b.log();
}

void expect_gang(kube::Client& c, const std::string& ns, const kube::Resource& pg,
                 const std::string& scheduler, bool volcano) {
  ASSERT_TRUE(wait_for([&] { return try_get(c, pg, ns, "gang").has_value(); }));
  auto group = c.get(pg, ns, "gang");
  EXPECT_EQ(group["spec"]["minMember"], 3) << group.dump();
  ASSERT_TRUE(wait_for([&] { return worker_pods(c, ns, "gang").size() == 2; }));
  for (const auto& p : worker_pods(c, ns, "gang")) {
    EXPECT_EQ(p["spec"]["schedulerName"], scheduler);
    if (volcano) {
      EXPECT_EQ(p["metadata"]["annotations"]["scheduling.k8s.io/group-name"], "gang");
    } else {
      EXPECT_EQ(p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"], "gang");
    }
  }
}

TEST_F(Startup, GangSchedulingVolcanoPodGroup) {
  start_operator({"--gang-scheduling=volcano"});
  create({.name = "gang", .workers = 2});
  expect_gang(c(), ns(), {"scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup", true},
              "volcano", true);
}

TEST_F(Startup, GangSchedulingSchedulerPluginsPodGroup) {
  start_operator({"--gang-scheduling=scheduler-plugins-scheduler"});
  create({.name = "gang", .workers = 2});
  expect_gang(c(), ns(), {"scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup", true},
              "scheduler-plugins-scheduler", false);
}

}  // namespace
}  // namespace optest
