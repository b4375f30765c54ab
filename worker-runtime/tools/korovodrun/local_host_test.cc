#include "local_host.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace korovod::launcher {
namespace {

Resolver fake_dns(std::map<std::string, std::string> table) {
  return [table](const std::string& name) -> std::optional<std::string> {
    auto it = table.find(name);
    if (it == table.end()) return std::nullopt;
    return it->second;
  };
}

TEST(LocalHost, RecognisesThisMachine) {
  const LocalHost local{"node-a.cluster", {"127.0.0.1", "10.0.0.5"}};
  const Resolver dns = fake_dns({{"node-a-alias", "10.0.0.5"}, {"node-b", "10.0.0.6"}, {"lo2", "127.0.0.2"}});
  EXPECT_TRUE(is_local_host("localhost", local, dns));
  EXPECT_TRUE(is_local_host("127.0.0.1", local, dns));
  EXPECT_TRUE(is_local_host("10.0.0.5", local, dns));
  EXPECT_TRUE(is_local_host("node-a.cluster", local, dns));
  EXPECT_TRUE(is_local_host("node-a", local, dns));
  EXPECT_TRUE(is_local_host("node-a-alias", local, dns));
  EXPECT_FALSE(is_local_host("node-b", local, dns));
  EXPECT_FALSE(is_local_host("lo2", local, dns)) << "127.0.0.2 is no interface's address";
  EXPECT_FALSE(is_local_host("unknown-host", local, dns));
}

TEST(LocalHost, DiscoversLoopback) {
  const LocalHost local = discover_local_host();
  EXPECT_FALSE(local.hostname.empty());
  EXPECT_EQ(local.addresses.count("127.0.0.1"), 1u);
}

TEST(LocalHost, StoreAddressForLocalJobsIsLoopback) {
  auto never = [](const std::string&) -> Result<std::string> { return Status::unknown("must not be asked"); };
  auto a = store_address({{}, ""}, fake_dns({}), never);
  ASSERT_TRUE(a.is_ok());
  EXPECT_EQ(a->address, "127.0.0.1");
  EXPECT_EQ(a->note, "");
}

// A route lookup that always finds 10.0.0.5 and keeps the address it was asked for in *asked.
RouteFinder route_via_10_0_0_5(std::string* asked) {
  return [asked](const std::string& to) -> Result<std::string> {
    *asked = to;
    return std::string("10.0.0.5");
  };
}

TEST(LocalHost, StoreAddressRoutesToTheFirstRemoteHostThatResolves) {
  const struct {
    const char* why;
    std::vector<std::string> hosts;
    std::map<std::string, std::string> dns;
    std::string asked;
  } cases[] = {
      {"the first remote host", {"node-b", "node-c"}, {{"node-b", "10.0.0.6"}}, "10.0.0.6"},
      // An elastic job's first discovery can list a pod whose DNS record does not exist yet.
      {"skips a host that does not resolve yet", {"worker-0.not-yet", "node-c"}, {{"node-c", "10.0.0.7"}}, "10.0.0.7"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.why);
    std::string asked;
    auto a = store_address({c.hosts, ""}, fake_dns(c.dns), route_via_10_0_0_5(&asked));
    ASSERT_TRUE(a.is_ok()) << a.status().to_string();
    EXPECT_EQ(a->address, "10.0.0.5");
    EXPECT_EQ(a->note, "");
    EXPECT_EQ(asked, c.asked);
  }
}

TEST(LocalHost, NoResolvableHostFallsBackToTheDefaultRouteAndSaysSo) {
  std::string asked;
  const RouteFinder route = route_via_10_0_0_5(&asked);
  auto a = store_address({{"worker-0.job.ns.svc", "worker-1.job.ns.svc"}, ""}, fake_dns({}), route);
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  EXPECT_EQ(a->address, "10.0.0.5");
  EXPECT_EQ(asked, "192.0.2.1") << "an address only a default route reaches";
  EXPECT_NE(a->note.find("worker-0.job.ns.svc, worker-1.job.ns.svc"), std::string::npos) << a->note;
  EXPECT_NE(a->note.find("--network-interface"), std::string::npos) << a->note;
}

TEST(LocalHost, ElasticJobWithNoHostsYetListensOnTheDefaultRoute) {
  // The MPIJob's workers are not Ready when the launcher starts: they will be remote.
  std::string asked;
  const RouteFinder route = route_via_10_0_0_5(&asked);
  StoreAddressInputs unknown;
  unknown.hosts_unknown = true;
  auto a = store_address(unknown, fake_dns({}), route);
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  EXPECT_EQ(a->address, "10.0.0.5");
  EXPECT_EQ(asked, "192.0.2.1");
  EXPECT_NE(a->note.find("listed no hosts"), std::string::npos) << a->note;

  auto no_route = [](const std::string& to) -> Result<std::string> { return Status::unknown("no route to " + to); };
  auto b = store_address(unknown, fake_dns({}), no_route);
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  EXPECT_EQ(b->address, "127.0.0.1");
  EXPECT_NE(b->note.find("only ranks on this machine"), std::string::npos) << b->note;

  unknown.iface = "lo";
  auto c = store_address(unknown, fake_dns({}), no_route);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->address, "127.0.0.1");
  EXPECT_EQ(c->note, "");
}

TEST(LocalHost, ResolvedHostWithoutARouteIsAnError) {
  auto route = [](const std::string& to) -> Result<std::string> { return Status::unknown("no route to " + to); };
  auto a = store_address({{"node-b"}, ""}, fake_dns({{"node-b", "10.9.9.9"}}), route);
  ASSERT_FALSE(a.is_ok());
  EXPECT_NE(a.status().message().find("node-b"), std::string::npos) << a.status().message();
  EXPECT_NE(a.status().message().find("10.9.9.9"), std::string::npos) << a.status().message();
}

TEST(LocalHost, NoNameResolvesAndNoDefaultRouteAsksForAnInterface) {
  auto route = [](const std::string& to) -> Result<std::string> { return Status::unknown("no route to " + to); };
  auto a = store_address({{"alias-only"}, ""}, fake_dns({}), route);
  ASSERT_FALSE(a.is_ok());
  EXPECT_NE(a.status().message().find("alias-only"), std::string::npos) << a.status().message();
  EXPECT_NE(a.status().message().find("--network-interface"), std::string::npos) << a.status().message();
}

TEST(LocalHost, InterfaceGivesItsAddress) {
  auto never = [](const std::string&) -> Result<std::string> { return Status::unknown("must not be asked"); };
  auto a = store_address({{"node-b"}, "lo"}, fake_dns({}), never);
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  EXPECT_EQ(a->address, "127.0.0.1");
  auto missing = store_address({{"node-b"}, "no-such-if0"}, fake_dns({}), never);
  EXPECT_FALSE(missing.is_ok());
}

TEST(LocalHost, RouteToLoopbackComesFromLoopback) {
  auto a = source_address_towards("127.0.0.1");
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  EXPECT_EQ(*a, "127.0.0.1");
}

}  // namespace
}  // namespace korovod::launcher
