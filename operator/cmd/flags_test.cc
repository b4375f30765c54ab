#include "cmd/flags.h"

#include <gtest/gtest.h>

namespace operator_cmd {
namespace {

ParseResult parse(std::vector<const char*> args, std::optional<std::string> env = std::nullopt) {
  args.insert(args.begin(), "korovod-operator");
  return parse_flags(static_cast<int>(args.size()), args.data(), env);
}

TEST(Flags, Defaults) {
  auto r = parse({});
  ASSERT_TRUE(r.flags);
  EXPECT_EQ(r.flags->threadiness, 2);
  EXPECT_EQ(r.flags->health_port, 8080);
  EXPECT_EQ(r.flags->monitoring_port, 0);
  EXPECT_TRUE(r.flags->leader_elect);
  EXPECT_EQ(r.flags->lock_namespace, "mpi-operator");
  EXPECT_EQ(r.flags->kube_api_qps, 50);
  EXPECT_EQ(r.flags->kube_api_burst, 100);
  EXPECT_EQ(r.flags->worker_create_concurrency, 16);
  EXPECT_TRUE(r.flags->namespaces.empty());
}

TEST(Flags, ReferenceSingleDashFormsAndKlogFlags) {
  auto r = parse({"-kubeConfig=/k", "-alsologtostderr", "--lock-namespace=x", "-threadiness", "4",
                  "-v=2", "-namespace", "a,b"});
  ASSERT_TRUE(r.flags) << r.output;
  EXPECT_EQ(r.flags->kubeconfig, "/k");
  EXPECT_EQ(r.flags->lock_namespace, "x");
  EXPECT_EQ(r.flags->threadiness, 4);
  EXPECT_EQ(r.flags->namespaces, (std::vector<std::string>{"a", "b"}));
}

TEST(Flags, ChartArguments) {
  auto r = parse({"--threadiness=2", "--health-port=8080", "--monitoring-port=8081",
                  "--kube-api-qps=50", "--kube-api-burst=100", "--controller-queue-rate-limit=10",
                  "--controller-queue-burst=100", "--worker-create-concurrency=16",
                  "--gang-scheduling=volcano", "--cluster-domain=cluster.local",
                  "--network-profile=roce", "--log-format=json", "--log-level=debug",
                  "--leader-elect=false", "--lock-namespace=korovod", "--progress-interval=10"});
  ASSERT_TRUE(r.flags) << r.output;
  EXPECT_FALSE(r.flags->leader_elect);
  EXPECT_EQ(r.flags->progress_interval, 10);
  EXPECT_EQ(parse({"--progress-interval=0"}).flags->progress_interval, 0);  // no progress
  EXPECT_FALSE(parse({"--progress-interval=-1"}).flags);
  EXPECT_EQ(r.flags->monitoring_port, 8081);
  EXPECT_EQ(r.flags->gang_scheduling, "volcano");
  EXPECT_EQ(r.flags->network_profile, "roce");
  EXPECT_EQ(r.flags->log_format, "json");
  EXPECT_TRUE(parse({"--leader-elect"}).flags->leader_elect);
}

TEST(Flags, NetworkPolicyModeAndScraper) {
  auto r = parse({"--network-policy=opt-in", "--network-policy-scraper-namespace=monitoring",
                  "--network-policy-scraper-labels=app=prometheus,team=obs"});
  ASSERT_TRUE(r.flags) << r.output;
  EXPECT_EQ(r.flags->network_policy, "opt-in");
  EXPECT_EQ(r.flags->network_policy_scraper_namespace, "monitoring");
  EXPECT_EQ(r.flags->network_policy_scraper_labels, "app=prometheus,team=obs");
  EXPECT_EQ(parse({}).flags->network_policy, "off");
  auto bad_mode = parse({"--network-policy=yes"});
  EXPECT_FALSE(bad_mode.flags);
  EXPECT_NE(bad_mode.output.find("network-policy"), std::string::npos) << bad_mode.output;
  auto bad_labels = parse({"--network-policy-scraper-labels=app"});
  EXPECT_FALSE(bad_labels.flags);
  EXPECT_NE(bad_labels.output.find("k=v"), std::string::npos) << bad_labels.output;
}

TEST(Flags, ProfilesConfigMapIsNamespaceSlashName) {
  EXPECT_EQ(parse({}).flags->profiles_config_map, "");
  auto r = parse({"--profiles-config-map=korovod-system/korovod-profiles"});
  ASSERT_TRUE(r.flags) << r.output;
  EXPECT_EQ(r.flags->profiles_config_map, "korovod-system/korovod-profiles");
  for (const char* bad : {"--profiles-config-map=korovod-profiles", "--profiles-config-map=/x",
                          "--profiles-config-map=a/", "--profiles-config-map=a/b/c"}) {
    auto b = parse({bad});
    EXPECT_FALSE(b.flags) << bad;
    EXPECT_NE(b.output.find("namespace/name"), std::string::npos) << bad << ": " << b.output;
  }
}

TEST(Flags, NamespaceFromEnvAndFlagWins) {
  EXPECT_EQ(parse({}, "team").flags->namespaces, (std::vector<std::string>{"team"}));
  EXPECT_EQ(parse({"--namespace=x"}, "team").flags->namespaces, (std::vector<std::string>{"x"}));
}

TEST(Flags, BadValuesAndHelp) {
  auto bad = parse({"--log-format=xml"});
  EXPECT_FALSE(bad.flags);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("log-format"), std::string::npos) << bad.output;
  auto help = parse({"--help"});
  EXPECT_FALSE(help.flags);
  EXPECT_EQ(help.exit_code, 0);
  for (const char* f : {"--kubeconfig", "--namespace", "--threadiness", "--monitoring-port",
                        "--health-port", "--gang-scheduling", "--leader-elect", "--lock-namespace",
                        "--kube-api-qps", "--kube-api-burst", "--controller-queue-rate-limit",
                        "--controller-queue-burst", "--cluster-domain", "--log-format",
                        "--log-level", "--network-profile", "--worker-create-concurrency",
                        "--version", "--master", "--network-policy", "--network-policy-scraper-namespace",
                        "--network-policy-scraper-labels", "--profiles-config-map"}) {
    EXPECT_NE(help.output.find(f), std::string::npos) << f;
  }
}

}  // namespace
}  // namespace operator_cmd
