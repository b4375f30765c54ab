#include "kube/event_recorder.h"

#include <gtest/gtest.h>

#include "kube/api_error.h"
#include "kube/fake_clock.h"
#include "kube/memory_client.h"
#include "kube/object_meta.h"

namespace kube {
namespace {

using resources::kEvents;

class EventRecorderTest : public ::testing::Test {
 protected:
  EventRecorderTest() {
    job = client.create(Resource{"kubeflow.org", "v2beta1", "mpijobs", "MPIJob", true}, "ns",
                        Object{{"metadata", {{"name", "pi"}}}});
  }
  EventRecorderOptions options() {
    EventRecorderOptions o;
    o.component = "korovod-operator";
    o.on_error = [this](const std::string& e) { errors.push_back(e); };
    return o;
  }
  std::vector<Object> events() { return client.list(kEvents, "ns", {}).items; }
  FakeClock clock;
  MemoryClient client{clock};
  Object job;
  std::vector<std::string> errors;
};

TEST_F(EventRecorderTest, CreatesEventForInvolvedObject) {
  EventRecorder rec(client, options(), clock);
  rec.normal(job, "MPIJobCreated", "MPIJob ns/pi is created.");
  const auto evs = events();
  ASSERT_EQ(evs.size(), 1u);
  const Object& e = evs[0];
  EXPECT_EQ(e["type"], "Normal");
  EXPECT_EQ(e["reason"], "MPIJobCreated");
  EXPECT_EQ(e["message"], "MPIJob ns/pi is created.");
  EXPECT_EQ(e["count"], 1);
  EXPECT_EQ(e["involvedObject"]["kind"], "MPIJob");
  EXPECT_EQ(e["involvedObject"]["uid"], uid_of(job));
  EXPECT_EQ(e["involvedObject"]["namespace"], "ns");
  EXPECT_EQ(e["source"]["component"], "korovod-operator");
  EXPECT_EQ(e["firstTimestamp"], "2026-01-01T00:00:00Z");
  EXPECT_EQ(name_of(e).rfind("pi.", 0), 0u);
}

TEST_F(EventRecorderTest, RepeatsAreAggregatedIntoCount) {
  EventRecorder rec(client, options(), clock);
  rec.warning(job, "ValidationError", "bad slots");
  clock.advance(std::chrono::seconds(30));
  rec.warning(job, "ValidationError", "bad slots");
  rec.warning(job, "ValidationError", "bad slots");
  const auto evs = events();
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(evs[0]["count"], 3);
  EXPECT_EQ(evs[0]["firstTimestamp"], "2026-01-01T00:00:00Z");
  EXPECT_EQ(evs[0]["lastTimestamp"], "2026-01-01T00:00:30Z");
  EXPECT_EQ(client.request_count(Verb::Create), 2);  // the job + one event
}

TEST_F(EventRecorderTest, DifferentMessagesAreSeparateEvents) {
  EventRecorder rec(client, options(), clock);
  rec.normal(job, "Scaled", "to 2");
  rec.normal(job, "Scaled", "to 3");
  rec.warning(job, "Scaled", "to 3");
  EXPECT_EQ(events().size(), 3u);
}

TEST_F(EventRecorderTest, RecreatesEventThatExpired) {
  EventRecorder rec(client, options(), clock);
  rec.normal(job, "R", "m");
  client.remove(kEvents, "ns", name_of(events()[0]), {});
  rec.normal(job, "R", "m");
  const auto evs = events();
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(evs[0]["count"], 1);
  EXPECT_TRUE(errors.empty());
}

TEST_F(EventRecorderTest, ApiFailuresAreReportedNotThrown) {
  EventRecorder rec(client, options(), clock);
  client.fail_next(Verb::Create, 1, ApiError(403, "Forbidden", "events is forbidden"));
  EXPECT_NO_THROW(rec.normal(job, "R", "m"));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("forbidden"), std::string::npos);
  rec.normal(job, "R", "m");  // recovers
  EXPECT_EQ(events().size(), 1u);
}

TEST_F(EventRecorderTest, ClusterScopedObjectsRecordIntoDefaultNamespace) {
  EventRecorder rec(client, options(), clock);
  const auto node = client.create(resources::kNodes, "", Object{{"metadata", {{"name", "n1"}}}});
  rec.normal(node, "Ready", "node is ready");
  EXPECT_EQ(client.list(kEvents, "default", {}).items.size(), 1u);
}

TEST_F(EventRecorderTest, AggregationCacheIsBounded) {
  auto opts = options();
  opts.cache_size = 2;
  EventRecorder rec(client, opts, clock);
  rec.normal(job, "A", "m");
  rec.normal(job, "B", "m");
  rec.normal(job, "C", "m");  // evicts A
  rec.normal(job, "A", "m");  // so A starts a new Event
  EXPECT_EQ(events().size(), 4u);
}

}  // namespace
}  // namespace kube
