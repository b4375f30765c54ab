#include "kube/log.h"

#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kube/fake_clock.h"

namespace kube {
namespace {

TEST(Logger, WritesKeyValueLines) {
  FakeClock clock;
  std::ostringstream out;
  Logger log(out, LogFormat::KeyValue, LogLevel::Info, &clock);
  log.info("reconciled job", {{"mpijob", "ns/pi"}, {"note", "say \"hi\""}});
  EXPECT_EQ(out.str(),
            "ts=2026-01-01T00:00:00.000000Z level=info msg=\"reconciled job\" mpijob=ns/pi "
            "note=\"say \\\"hi\\\"\"\n");
}

TEST(Logger, WritesJsonLines) {
  FakeClock clock;
  std::ostringstream out;
  Logger log(out, LogFormat::Json, LogLevel::Info, &clock);
  log.warn("slow", {{"took_ms", "1200"}});
  const auto j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j["level"], "warn");
  EXPECT_EQ(j["msg"], "slow");
  EXPECT_EQ(j["took_ms"], "1200");
  EXPECT_EQ(j["ts"], "2026-01-01T00:00:00.000000Z");
}

TEST(Logger, DropsLinesBelowMinimumLevel) {
  std::ostringstream out;
  Logger log(out, LogFormat::KeyValue, LogLevel::Warn);
  log.debug("d");
  log.info("i");
  EXPECT_EQ(out.str(), "");
  log.error("e");
  EXPECT_NE(out.str().find("level=error"), std::string::npos);
}

TEST(Logger, WithAddsFieldsAndSharesTheSink) {
  std::ostringstream out;
  Logger log(out);
  const Logger job = log.with({{"mpijob", "a/b"}});
  job.info("x", {{"k", "v"}});
  log.info("y");
  const std::string s = out.str();
  EXPECT_NE(s.find("msg=x mpijob=a/b k=v\n"), std::string::npos);
  EXPECT_NE(s.find("msg=y\n"), std::string::npos);
}

TEST(Logger, ConcurrentWritersNeverInterleaveLines) {
  std::ostringstream out;
  Logger log(out, LogFormat::Json);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) log.info("m", {{"t", std::to_string(t)}});
    });
  for (auto& t : threads) t.join();
  std::istringstream lines(out.str());
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    ASSERT_NO_THROW(nlohmann::json::parse(line)) << line;
    ++n;
  }
  EXPECT_EQ(n, 800);
}

TEST(Logger, ParsesFlagValues) {
  EXPECT_EQ(parse_log_format("json"), LogFormat::Json);
  EXPECT_EQ(parse_log_format("text"), LogFormat::KeyValue);
  EXPECT_EQ(parse_log_level("debug"), LogLevel::Debug);
  EXPECT_THROW(parse_log_format("xml"), std::invalid_argument);
  EXPECT_THROW(parse_log_level("loud"), std::invalid_argument);
}

}  // namespace
}  // namespace kube
