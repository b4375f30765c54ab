// The host discovery script run as a real process (sh -c): its output parsed, its stderr left
// out, a failing script named by its exit code. Parsing alone: tools/korovodrun/elastic_parts_test.cc.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "script_discovery.h"

namespace korovod::launcher {
namespace {

TEST(Discovery, ScriptOutputAndFailure) {
  ScriptDiscovery ok("echo a:2; echo noise >&2; echo b", 2, {{"PATH", "/usr/bin:/bin"}});
  Result<std::vector<HostSlots>> h = ok.discover();
  ASSERT_TRUE(h.is_ok()) << h.status().message();
  EXPECT_EQ(hosts_to_string(*h), "a:2,b:2");
  ScriptDiscovery bad("echo a:1; exit 3", 1, {{"PATH", "/usr/bin:/bin"}});
  Result<std::vector<HostSlots>> e = bad.discover();
  ASSERT_FALSE(e.is_ok());
  EXPECT_NE(e.status().message().find("code 3"), std::string::npos) << e.status().message();
}

}  // namespace
}  // namespace korovod::launcher
