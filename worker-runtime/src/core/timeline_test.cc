// The timeline writer's JSON (Chrome trace format, Horovod's records).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/testing/fake_env.h"
#include "core/timeline.h"

namespace korovod {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Timeline, FileIsValidJsonAfterEveryFlushWithHorovodRecords) {
  SystemEnv env;
  Timeline tl(env);
  const std::string path = ::testing::TempDir() + "/korovod_timeline_test.json";
  ASSERT_TRUE(tl.start(path, /*mark_cycles=*/true).is_ok());
  auto first = nlohmann::json::parse(slurp(path));
  ASSERT_TRUE(first.is_array());
  EXPECT_EQ(first[0]["name"], "process_name");
  EXPECT_TRUE(first[0]["args"].contains("start_time_since_epoch_in_micros"));

  tl.mark_cycle();
  tl.negotiate_start("grad \"w\"", RequestType::kAllreduce);
  tl.negotiate_rank_ready("grad \"w\"", 1);
  tl.negotiate_end("grad \"w\"");
  tl.flush();
  auto mid = nlohmann::json::parse(slurp(path));  // valid while running
  tl.op_start("grad \"w\"", ResponseType::kAllreduce);
  tl.activity_start("grad \"w\"", "MPI_ALLREDUCE");
  tl.activity_end("grad \"w\"");
  tl.op_end("grad \"w\"", DataType::kBFloat16, {2, 3});
  tl.stop();
  auto all = nlohmann::json::parse(slurp(path));
  EXPECT_GT(all.size(), mid.size());
  std::vector<std::string> names;
  for (const auto& rec : all) {
    if (rec.contains("name")) names.push_back(rec["name"]);
  }
  auto has = [&](const std::string& n) { return std::find(names.begin(), names.end(), n) != names.end(); };
  EXPECT_TRUE(has("CYCLE_START"));
  EXPECT_TRUE(has("NEGOTIATE_ALLREDUCE"));
  EXPECT_TRUE(has("process_sort_index"));
  EXPECT_TRUE(has("ALLREDUCE"));
  EXPECT_TRUE(has("MPI_ALLREDUCE"));
  EXPECT_TRUE(has("1"));  // the per-rank ready tick
  const auto& last = all.back();
  EXPECT_EQ(last["ph"], "E");
  EXPECT_EQ(last["args"]["dtype"], "HOROVOD_BFLOAT16");
  EXPECT_EQ(last["args"]["shape"], "[2, 3]");
  bool named = false;
  for (const auto& rec : all) {
    if (rec.value("name", "") == "process_name" && rec["pid"] == 1) named = rec["args"]["name"] == "grad \"w\"";
  }
  EXPECT_TRUE(named);
  std::remove(path.c_str());
}

// On a fake Env: the file is a string and the stamps are the Env's time, to the microsecond.
TEST(Timeline, StampsAreTheEnvsTimeAndTheFileIsTheEnvs) {
  testing::FakeEnv env;
  Timeline tl(env);
  ASSERT_TRUE(tl.start("/job/timeline.json", /*mark_cycles=*/false).is_ok());
  env.advance(std::chrono::microseconds(250));
  tl.negotiate_start("w", RequestType::kAllreduce);
  env.advance(std::chrono::microseconds(1500));
  tl.negotiate_end("w");
  tl.flush();
  const auto all = nlohmann::json::parse(env.file("/job/timeline.json"));
  EXPECT_EQ(all[0]["args"]["start_time_since_epoch_in_micros"], env.wall_micros() - 1750);
  std::vector<int64_t> stamps;
  for (const auto& rec : all) {
    if (rec.value("name", "") == "NEGOTIATE_ALLREDUCE" || rec.value("ph", "") == "E") stamps.push_back(rec["ts"]);
  }
  EXPECT_EQ(stamps, (std::vector<int64_t>{250, 1750}));
  tl.stop();
  EXPECT_NO_THROW(nlohmann::json::parse(env.file("/job/timeline.json")));
  const Status refused = tl.start("/unwritable/timeline.json", false);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("timeline: cannot open '/unwritable/timeline.json'"), std::string::npos)
      << refused.message();
}

}  // namespace
}  // namespace korovod
