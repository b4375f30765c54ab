#include "kube/event_recorder.h"

#include <functional>
#include <mutex>
#include <thread>

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
    // Called on the recorder's retry thread as well as the caller's.
    o.on_error = [this](const std::string& e) {
      std::lock_guard lock(errors_mu);
      errors_.push_back(e);
    };
    return o;
  }
  std::vector<Object> events() { return client.list(kEvents, "ns", {}).items; }
  // Moves fake time in steps of the longest retry delay until pred() holds (the recorder's
  // retries run on their own thread, so this polls in real time, up to 5 s).
  bool advance_until(const std::function<bool()>& pred) {
    for (auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
         std::chrono::steady_clock::now() < end;) {
      if (pred()) return true;
      clock.advance(std::chrono::seconds(10));
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return pred();
  }
  FakeClock clock;
  MemoryClient client{clock};
  Object job;
  // A copy, taken under the lock (the retry thread may be appending).
  std::vector<std::string> errors() {
    std::lock_guard lock(errors_mu);
    return errors_;
  }
  std::mutex errors_mu;
  std::vector<std::string> errors_;
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
  EXPECT_TRUE(errors().empty());
}

TEST_F(EventRecorderTest, ApiFailuresAreReportedNotThrown) {
  EventRecorder rec(client, options(), clock);
  client.fail_next(Verb::Create, 1, ApiError(403, "Forbidden", "events is forbidden"));
  EXPECT_NO_THROW(rec.normal(job, "R", "m"));
  ASSERT_EQ(errors().size(), 1u);
  EXPECT_NE(errors()[0].find("forbidden"), std::string::npos);
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

// The API server away (no connection): the write is tried again later, under the same name.
TEST_F(EventRecorderTest, TransientFailureIsRetriedInTheBackground) {
  EventRecorder rec(client, options(), clock);
  client.fail_next(Verb::Create, 2, ApiError(0, "ConnectionFailed", "connection refused"),
                   "events");
  rec.normal(job, "MPIJobSucceeded", "done");
  EXPECT_TRUE(events().empty());
  ASSERT_EQ(errors().size(), 1u);
  EXPECT_NE(errors()[0].find("attempt 1 of 12, retrying"), std::string::npos) << errors()[0];
  ASSERT_TRUE(advance_until([&] { return !events().empty(); }));
  const auto evs = events();
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(evs[0]["reason"], "MPIJobSucceeded");
  EXPECT_EQ(evs[0]["count"], 1);
  EXPECT_EQ(client.request_count(Verb::Create), 1 + 3);  // the job + 2 failed + 1 landed
  // Aggregation resumes on the Event the retry created.
  rec.normal(job, "MPIJobSucceeded", "done");
  ASSERT_EQ(events().size(), 1u);
  EXPECT_EQ(events()[0]["count"], 2);
}

// A create that landed although its answer was lost: the retry finds it (same name) and
// leaves one Event, not two; a repeat recorded meanwhile is counted on it.
TEST_F(EventRecorderTest, RetryOfCreateThatLandedMakesNoDuplicate) {
  std::string sent_name;
  int creates = 0;
  client.set_failure_hook([&](const Request& r) -> std::optional<ApiError> {
    if (r.verb != Verb::Create || r.resource.resource != "events" || creates++ > 0) {
      return std::nullopt;
    }
    sent_name = r.name;
    return ApiError(0, "ConnectionFailed", "connection reset after the request was sent");
  });
  EventRecorder rec(client, options(), clock);
  rec.normal(job, "MPIJobCreated", "created");
  ASSERT_FALSE(sent_name.empty());
  // What the API server did with the request whose answer was lost.
  client.create(kEvents, "ns",
                {{"metadata", {{"name", sent_name}}}, {"reason", "MPIJobCreated"}, {"count", 1}});
  rec.normal(job, "MPIJobCreated", "created");  // a repeat while the write is pending
  ASSERT_TRUE(advance_until([&] { return events().size() == 1 && events()[0]["count"] == 2; }))
      << events().size();
  EXPECT_EQ(name_of(events()[0]), sent_name);
}

TEST_F(EventRecorderTest, RetriesStopAfterMaxAttempts) {
  auto opts = options();
  opts.max_attempts = 3;
  EventRecorder rec(client, opts, clock);
  client.fail_next(Verb::Create, 100, ApiError(503, "ServiceUnavailable", "etcd is away"),
                   "events");
  rec.normal(job, "R", "m");
  ASSERT_TRUE(advance_until([&] {
    const auto e = errors();
    return !e.empty() && e.back().find("failed after 3 attempts") != std::string::npos;
  })) << (errors().empty() ? "" : errors().back());
  clock.advance(std::chrono::minutes(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(client.request_count(Verb::Create), 1 + 3);  // the job + 3 attempts, no more
  EXPECT_TRUE(events().empty());
}

TEST_F(EventRecorderTest, PermanentFailureIsNotRetried) {
  EventRecorder rec(client, options(), clock);
  client.fail_next(Verb::Create, 1, ApiError(422, "Invalid", "bad event"), "events");
  rec.normal(job, "R", "m");
  clock.advance(std::chrono::minutes(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(client.request_count(Verb::Create), 1 + 1);
  EXPECT_TRUE(events().empty());
}

}  // namespace
}  // namespace kube
