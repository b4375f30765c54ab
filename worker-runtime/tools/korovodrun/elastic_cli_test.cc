// korovodrun's elastic flags (horovodrun's "elastic arguments"): spellings, horovodrun's defaults,
// usage errors that name the flag, --help. The driver's use of them: elastic_driver_test.cc.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli.h"

namespace korovod::launcher {
namespace {

using Words = std::vector<std::string>;

// Parses args; the usage text it printed on stderr goes to *error.
ParsedCommandLine parse(const Words& args, std::string* error = nullptr) {
  ::testing::internal::CaptureStderr();
  ParsedCommandLine p = parse_command_line(args);
  const std::string text = ::testing::internal::GetCapturedStderr();
  if (error) *error = text;
  return p;
}

TEST(ElasticCli, NotElasticWithoutElasticFlags) {
  const ParsedCommandLine p = parse({"-np", "2", "prog"});
  ASSERT_FALSE(p.exit_code);
  const LaunchOptions& o = p.options;
  EXPECT_FALSE(o.elastic());
  EXPECT_FALSE(o.min_np);
  EXPECT_FALSE(o.max_np);
  EXPECT_EQ(o.slots_per_host, 1);  // horovodrun: discovery lines without ':slots' get 1 slot
  EXPECT_FALSE(o.elastic_timeout_seconds);  // resolved later: HOROVOD_ELASTIC_TIMEOUT, else 600
  EXPECT_FALSE(o.reset_limit);              // horovodrun: no limit
  EXPECT_TRUE(o.blacklist_cooldown_range.empty());  // horovodrun: blacklisted for good
  EXPECT_EQ(o.blacklist_after_failures, 3);
}

TEST(ElasticCli, EveryFlagWithHorovodrunsSpelling) {
  const ParsedCommandLine p = parse({"-np", "3", "--min-np", "2", "--max-np", "5", "--host-discovery-script",
                                     "/etc/mpi/discover_hosts.sh", "--slots-per-host", "4", "--elastic-timeout", "30",
                                     "--reset-limit", "7", "--blacklist-cooldown-range", "10", "100",
                                     "--blacklist-after-failures", "1", "python", "train.py"});
  ASSERT_FALSE(p.exit_code);
  const LaunchOptions& o = p.options;
  EXPECT_TRUE(o.elastic());
  EXPECT_EQ(o.num_proc, 3);
  EXPECT_EQ(o.min_np, 2);
  EXPECT_EQ(o.max_np, 5);
  EXPECT_EQ(o.host_discovery_script, "/etc/mpi/discover_hosts.sh");
  EXPECT_EQ(o.slots_per_host, 4);
  EXPECT_EQ(o.elastic_timeout_seconds, 30);
  EXPECT_EQ(o.reset_limit, 7);
  EXPECT_EQ(o.blacklist_cooldown_range, (std::vector<int>{10, 100}));
  EXPECT_EQ(o.blacklist_after_failures, 1);
  EXPECT_EQ(o.command, (Words{"python", "train.py"}));
}

TEST(ElasticCli, CooldownRangeRightBeforeTheCommandTakesTwoValues) {
  const ParsedCommandLine p =
      parse({"--min-np", "2", "--host-discovery-script", "d", "--blacklist-cooldown-range", "10", "100", "python",
             "train.py"});
  ASSERT_FALSE(p.exit_code);
  EXPECT_EQ(p.options.blacklist_cooldown_range, (std::vector<int>{10, 100}));
  EXPECT_EQ(p.options.command, (Words{"python", "train.py"}));
}

TEST(ElasticCli, LongAliases) {
  const ParsedCommandLine p = parse({"--min-num-proc", "2", "--max-num-proc", "4", "--host-discovery-script", "d", "p"});
  ASSERT_FALSE(p.exit_code);
  EXPECT_EQ(p.options.min_np, 2);
  EXPECT_EQ(p.options.max_np, 4);
}

// horovodrun: min_num_proc = --min-np or -np; korovodrun also starts --min-np workers without -np.
TEST(ElasticCli, MinNpAndNpDefaultToEachOther) {
  ParsedCommandLine p = parse({"-np", "3", "--host-discovery-script", "d", "prog"});
  ASSERT_FALSE(p.exit_code);
  EXPECT_TRUE(p.options.elastic());
  EXPECT_EQ(p.options.min_np, 3);
  EXPECT_FALSE(p.options.max_np);  // horovodrun: unbounded
  p = parse({"--min-np", "2", "--host-discovery-script", "d", "prog"});
  ASSERT_FALSE(p.exit_code);
  EXPECT_EQ(p.options.num_proc, 2);
  EXPECT_EQ(p.options.min_np, 2);
}

TEST(ElasticCli, FixedHostsInsteadOfADiscoveryScript) {
  const ParsedCommandLine p = parse({"-np", "2", "--min-np", "1", "-H", "a:2,b:2", "prog"});
  ASSERT_FALSE(p.exit_code);
  EXPECT_TRUE(p.options.elastic());
  EXPECT_EQ(p.options.hosts, "a:2,b:2");
}

TEST(ElasticCli, TheCommandKeepsItsOwnElasticLookingFlags) {
  const ParsedCommandLine p =
      parse({"--min-np", "2", "--host-discovery-script", "d", "python", "train.py", "--min-np", "9", "--reset-limit", "x"});
  ASSERT_FALSE(p.exit_code);
  EXPECT_EQ(p.options.min_np, 2);
  EXPECT_FALSE(p.options.reset_limit);
  EXPECT_EQ(p.options.command, (Words{"python", "train.py", "--min-np", "9", "--reset-limit", "x"}));
}

struct BadCase {
  Words args;
  std::string flag;  // the usage message must name it
};

TEST(ElasticCli, BadValuesExitTwoNamingTheFlag) {
  const Words elastic = {"--host-discovery-script", "d"};
  auto with = [&elastic](Words args) {
    args.insert(args.begin(), elastic.begin(), elastic.end());
    args.push_back("prog");
    return args;
  };
  const std::vector<BadCase> bad = {
      {with({"--min-np", "0"}), "--min-np"},
      {with({"--min-np", "two"}), "--min-np"},
      {with({"--min-np", "2.5"}), "--min-np"},
      {with({"--max-np", "0"}), "--max-np"},
      {with({"--min-np", "3", "--max-np", "2"}), "--max-np"},
      {with({"-np", "2", "--slots-per-host", "0"}), "--slots-per-host"},
      {with({"-np", "2", "--elastic-timeout", "0"}), "--elastic-timeout"},
      {with({"-np", "2", "--elastic-timeout", "-5"}), "--elastic-timeout"},
      {with({"-np", "2", "--reset-limit", "-1"}), "--reset-limit"},
      {with({"-np", "2", "--blacklist-cooldown-range", "10"}), "--blacklist-cooldown-range"},
      {with({"-np", "2", "--blacklist-cooldown-range", "ten", "100"}), "--blacklist-cooldown-range"},
      {with({"-np", "2", "--blacklist-after-failures", "0"}), "--blacklist-after-failures"},
      {{"-np", "2", "--reset-limit", "3", "prog"}, "--reset-limit"},                    // not elastic
      {{"-np", "2", "--elastic-timeout", "3", "prog"}, "--elastic-timeout"},            // not elastic
      {{"-np", "2", "--blacklist-cooldown-range", "1", "2", "prog"}, "--blacklist-cooldown-range"},
      {{"--min-np", "2", "prog"}, "--host-discovery-script"},                             // no hosts at all
      {{"--min-np", "2", "--host-discovery-script", "d", "-H", "a:2", "prog"}, "--host-discovery-script"},
      {{"--min-np", "2", "--host-discovery-script", "d", "--mpi", "prog"}, "--mpi"},
      {{"--max-np", "4", "--host-discovery-script", "d", "prog"}, "-np"},                 // how many to start?
  };
  for (const BadCase& c : bad) {
    std::string error;
    const ParsedCommandLine p = parse(c.args, &error);
    EXPECT_EQ(p.exit_code, 2) << ::testing::PrintToString(c.args);
    EXPECT_NE(error.find(c.flag), std::string::npos)
        << ::testing::PrintToString(c.args) << " should name " << c.flag << ": " << error;
  }
}

// CLI11's stock range checks print "Value 0 not in range 0.000000 to 1.79769e+308", which
// contradicts itself; the message must say what is allowed.
TEST(ElasticCli, RangeMessagesSayWhatIsAllowed) {
  std::string error;
  parse({"--host-discovery-script", "d", "--min-np", "0", "prog"}, &error);
  EXPECT_NE(error.find("--min-np: 0 is not an integer >= 1"), std::string::npos) << error;
  parse({"--host-discovery-script", "d", "-np", "2", "--reset-limit", "-1", "prog"}, &error);
  EXPECT_NE(error.find("--reset-limit: -1 is not an integer >= 0"), std::string::npos) << error;
  parse({"--host-discovery-script", "d", "--min-np", "two", "prog"}, &error);
  EXPECT_NE(error.find("--min-np: two is not an integer >= 1"), std::string::npos) << error;
}

TEST(ElasticCli, HelpListsEveryElasticFlag) {
  ::testing::internal::CaptureStdout();
  const ParsedCommandLine p = parse_command_line({"--help"});
  const std::string help = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(p.exit_code, 0);
  for (const char* flag : {"--min-np", "--min-num-proc", "--max-np", "--max-num-proc", "--host-discovery-script",
                           "--slots-per-host", "--elastic-timeout", "--reset-limit", "--blacklist-cooldown-range",
                           "--blacklist-after-failures", "HOROVOD_ELASTIC_TIMEOUT", "docs/elastic.md"}) {
    EXPECT_NE(help.find(flag), std::string::npos) << "--help does not mention " << flag << ":\n" << help;
  }
}

}  // namespace
}  // namespace korovod::launcher
