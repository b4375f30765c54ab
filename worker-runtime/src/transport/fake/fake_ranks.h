// Test helpers over the fake transport (transport/fake): what the negotiation and engine tests
// share to run N ranks as N threads of one process (run_ranks in core/testing/test_ranks.h).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <vector>

#include "algorithms/executor.h"
#include "core/logger.h"
#include "korovod/clock.h"
#include "korovod/runtime.h"
#include "transport/fake/fake_world.h"

namespace korovod::testing {

// A fake world of n ranks (a collective times out after 10 s) with the clock and the quiet logger
// a Negotiator takes.
struct FakeCluster {
  explicit FakeCluster(int n) : world(std::make_shared<fake::FakeWorld>(n, std::chrono::seconds(10))) {}
  std::shared_ptr<fake::FakeWorld> world;
  SystemClock clock;
  Logger log{LogLevel::kError, true, nullptr};
};

// 0, 1, ..., n-1: every rank of an n-rank world.
inline std::vector<int> iota_ranks(int n) {
  std::vector<int> r(n);
  for (int i = 0; i < n; ++i) r[i] = i;
  return r;
}

// A short cycle, only fatal log lines, and collectives that time out after `timeout_s`.
inline Config fast_config(double timeout_s = 5) {
  Config c;
  c.cycle_time_ms = 0.5;
  c.log_level = LogLevel::kFatal;
  c.collective_timeout_seconds = timeout_s;
  return c;
}

// Rank `rank`'s Runtime over the fake transport and the fake CPU backend; nullptr (and a failed
// expectation naming why) when it does not start.
inline std::unique_ptr<Runtime> make_fake_runtime(const std::shared_ptr<fake::FakeWorld>& world, int rank,
                                                  Config config = fast_config(),
                                                  std::vector<std::vector<int>> process_sets = {}) {
  RuntimeOptions o;
  o.make_executor = make_executor;
  o.config = std::move(config);
  o.transport = std::make_shared<fake::FakeTransportProvider>(world, rank);
  o.backends.push_back(std::make_shared<fake::FakeBackendProvider>(world, rank));
  o.process_sets = std::move(process_sets);
  Result<std::unique_ptr<Runtime>> rt = Runtime::create(std::move(o));
  EXPECT_TRUE(rt.is_ok()) << rt.status().to_string();
  return rt.is_ok() ? std::move(rt).value() : nullptr;
}

}  // namespace korovod::testing
