#include "local_host.h"

#include <gtest/gtest.h>

#include <map>

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
  EXPECT_EQ(*a, "127.0.0.1");
}

TEST(LocalHost, StoreAddressRoutesToTheFirstRemoteHost) {
  std::string asked;
  auto route = [&asked](const std::string& to) -> Result<std::string> {
    asked = to;
    return std::string("10.0.0.5");
  };
  auto a = store_address({{"node-b", "node-c"}, ""}, fake_dns({{"node-b", "10.0.0.6"}}), route);
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  EXPECT_EQ(*a, "10.0.0.5");
  EXPECT_EQ(asked, "10.0.0.6");
}

TEST(LocalHost, UnresolvableRemoteHostAsksForAnInterface) {
  auto route = [](const std::string&) -> Result<std::string> { return std::string("x"); };
  auto a = store_address({{"alias-only"}, ""}, fake_dns({}), route);
  ASSERT_FALSE(a.is_ok());
  EXPECT_NE(a.status().message().find("--network-interface"), std::string::npos) << a.status().message();
}

TEST(LocalHost, InterfaceGivesItsAddress) {
  auto never = [](const std::string&) -> Result<std::string> { return Status::unknown("must not be asked"); };
  auto a = store_address({{"node-b"}, "lo"}, fake_dns({}), never);
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  EXPECT_EQ(*a, "127.0.0.1");
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
