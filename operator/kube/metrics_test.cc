#include "kube/metrics.h"

#include <thread>

#include <gtest/gtest.h>

namespace kube {
namespace {

TEST(Metrics, RendersCounterWithLabels) {
  MetricsRegistry reg;
  auto& c = reg.counter("korovod_reconcile_total", "Reconciles by result.", {"result"});
  c.with({"success"}).inc();
  c.with({"success"}).inc(2);
  c.with({"error"}).inc();
  EXPECT_EQ(reg.render(),
            "# HELP korovod_reconcile_total Reconciles by result.\n"
            "# TYPE korovod_reconcile_total counter\n"
            "korovod_reconcile_total{result=\"error\"} 1\n"
            "korovod_reconcile_total{result=\"success\"} 3\n");
}

TEST(Metrics, RendersGaugeWithoutLabelsAndFractions) {
  MetricsRegistry reg;
  auto& g = reg.gauge("queue_depth", "Depth.").with({});
  g.set(5);
  g.dec(0.5);
  EXPECT_NE(reg.render().find("queue_depth 4.5\n"), std::string::npos);
}

TEST(Metrics, RendersHistogramCumulativeBuckets) {
  MetricsRegistry reg;
  auto& h = reg.histogram("latency_seconds", "Latency.", {"op"}, {0.1, 1}).with({"get"});
  h.observe(0.05);
  h.observe(0.1);  // le is inclusive
  h.observe(0.5);
  h.observe(3);
  EXPECT_EQ(reg.render(),
            "# HELP latency_seconds Latency.\n"
            "# TYPE latency_seconds histogram\n"
            "latency_seconds_bucket{op=\"get\",le=\"0.1\"} 2\n"
            "latency_seconds_bucket{op=\"get\",le=\"1\"} 3\n"
            "latency_seconds_bucket{op=\"get\",le=\"+Inf\"} 4\n"
            "latency_seconds_sum{op=\"get\"} 3.65\n"
            "latency_seconds_count{op=\"get\"} 4\n");
}

TEST(Metrics, EscapesLabelValuesAndHelp) {
  MetricsRegistry reg;
  reg.counter("c", "line1\nline2 \\ end", {"l"}).with({"a\"b\\c\nd"}).inc();
  const std::string out = reg.render();
  EXPECT_NE(out.find("# HELP c line1\\nline2 \\\\ end\n"), std::string::npos);
  EXPECT_NE(out.find("c{l=\"a\\\"b\\\\c\\nd\"} 1\n"), std::string::npos);
}

TEST(Metrics, GaugeCallbackIsReadAtRenderTime) {
  MetricsRegistry reg;
  double depth = 1;
  reg.gauge_callback("workqueue_depth", "Depth.", [&] { return depth; });
  depth = 7;
  EXPECT_NE(reg.render().find("workqueue_depth 7\n"), std::string::npos);
}

TEST(Metrics, RegisteringTwiceReturnsSameFamilyOrThrowsOnMismatch) {
  MetricsRegistry reg;
  auto& a = reg.counter("x_total", "X.", {"a"});
  EXPECT_EQ(&a, &reg.counter("x_total", "X.", {"a"}));
  EXPECT_THROW(reg.gauge("x_total", "X.", {"a"}), std::invalid_argument);
  EXPECT_THROW(reg.counter("x_total", "X.", {"b"}), std::invalid_argument);
}

TEST(Metrics, RejectsBadNamesArityAndNegativeIncrements) {
  MetricsRegistry reg;
  EXPECT_THROW(reg.counter("1bad", "h"), std::invalid_argument);
  EXPECT_THROW(reg.counter("ok", "h", {"bad-label"}), std::invalid_argument);
  EXPECT_THROW(reg.histogram("h", "h", {"le"}), std::invalid_argument);
  EXPECT_THROW(reg.histogram("h2", "h", {}, {1, 0.5}), std::invalid_argument);
  auto& c = reg.counter("c_total", "h", {"a"});
  EXPECT_THROW(c.with({}), std::invalid_argument);
  EXPECT_THROW(c.with({"x"}).inc(-1), std::invalid_argument);
}

TEST(Metrics, ConcurrentIncrementsAreNotLost) {
  MetricsRegistry reg;
  auto& c = reg.counter("n_total", "N.");
  auto& h = reg.histogram("h_seconds", "H.", {});
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        c.with({}).inc();
        h.with({}).observe(0.01);
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(c.with({}).value(), 40000);
  EXPECT_EQ(h.with({}).count(), 40000u);
}

TEST(Metrics, BucketHelpers) {
  EXPECT_EQ(default_buckets().size(), 11u);
  EXPECT_EQ(exponential_buckets(1, 2, 4), (std::vector<double>{1, 2, 4, 8}));
}

}  // namespace
}  // namespace kube
