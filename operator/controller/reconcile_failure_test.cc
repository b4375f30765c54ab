// The controller's failure handling: which failures are retried, that a retryable one is
// requeued with backoff and a permanent one is not (its backoff forgotten, a Warning event on
// the MPIJob, one error line naming the job and the rejected field), and the same end to end
// through the Manager against a MemoryClient that refuses worker pods.
#include <atomic>
#include <functional>
#include <mutex>
#include <sstream>
#include <thread>
#include <utility>

#include <gtest/gtest.h>

#include "controller/manager.h"
#include "controller/reconcile_failure.h"
#include "kube/api_error.h"
#include "kube/fake_clock.h"
#include "kube/memory_client.h"
#include "kube/object_meta.h"
#include "mpijob/testing/fixtures.h"

namespace controller {
namespace {

using kube::resources::kPods;

class RecordingRecorder final : public mpijob::Recorder {
 public:
  void event(const kube::Object& job, const mpijob::Event& e) override {
    std::lock_guard lock(mu_);
    events_.push_back({kube::object_key(job), e});
  }
  void count(mpijob::Counter) override {}
  // Events with `reason`, as "namespace/name: message".
  std::vector<std::string> with_reason(const std::string& reason) {
    std::lock_guard lock(mu_);
    std::vector<std::string> out;
    for (const auto& [key, e] : events_) {
      if (e.reason == reason) out.push_back(key + ": " + e.type + ": " + e.message);
    }
    return out;
  }

 private:
  std::mutex mu_;
  std::vector<std::pair<std::string, mpijob::Event>> events_;
};

kube::ApiError invalid_pod(const std::string& name) {
  kube::ApiError e(422, "Invalid",
                   "Pod \"" + name + "\" is invalid: spec.containers[0].resources.requests[" +
                       "nvidia.com/gpu]: Invalid value: \"1500m\": must be an integer");
  e.fields = {"spec.containers[0].resources.requests[nvidia.com/gpu]"};
  return e;
}

template <typename E>
Failure classify_thrown(E e) {
  return classify(std::make_exception_ptr(std::move(e)));
}

TEST(ReconcileFailures, ClassifiesWhatAReconcileThrows) {
  const Failure invalid = classify_thrown(invalid_pod("pi-worker-0"));
  EXPECT_EQ(invalid.cls, FailureClass::Permanent);
  EXPECT_EQ(invalid.reason,
            "Invalid (HTTP 422) on spec.containers[0].resources.requests[nvidia.com/gpu]");
  EXPECT_NE(invalid.message.find("pi-worker-0"), std::string::npos);
  EXPECT_EQ(classify_thrown(kube::ApiError(403, "Forbidden", "violates PodSecurity")).cls,
            FailureClass::Permanent);
  EXPECT_EQ(classify_thrown(kube::bad_request_error("bad")).cls, FailureClass::Permanent);
  // Retryable: the server, a stale cache, quota, our object taken by someone else, unknowns.
  EXPECT_EQ(classify_thrown(kube::ApiError(503, "ServiceUnavailable", "etcd")).cls,
            FailureClass::Retryable);
  EXPECT_EQ(classify_thrown(kube::conflict_error("mpijobs", "pi", "modified")).cls,
            FailureClass::Retryable);
  EXPECT_EQ(classify_thrown(kube::not_found_error("pods", "pi-worker-0")).cls,
            FailureClass::Retryable);
  EXPECT_EQ(classify_thrown(kube::ApiError(403, "Forbidden", "exceeded quota: gpu")).cls,
            FailureClass::Retryable);
  const Failure taken = classify_thrown(mpijob::ResourceExistsError("pi-config is not ours"));
  EXPECT_EQ(taken.cls, FailureClass::Retryable);
  EXPECT_EQ(taken.reason, "ErrResourceExists");
  const Failure other = classify_thrown(std::runtime_error("ssh key generation: no entropy"));
  EXPECT_EQ(other.cls, FailureClass::Retryable);
  EXPECT_EQ(other.reason, "Unclassified");
  EXPECT_EQ(other.message, "ssh key generation: no entropy");
  EXPECT_EQ(classify_thrown(42).cls, FailureClass::Retryable);
}

class ReconcileFailuresTest : public ::testing::Test {
 protected:
  // Hands the key out as a worker would get it (after its delay, if any); fails instead of
  // blocking when nothing would hand it out.
  void take(const std::string& key) {
    clock.advance(std::chrono::seconds(1));
    ASSERT_EQ(queue.len(), 1u) << "nothing queued " << key;
    ASSERT_EQ(queue.get(), key);
  }

  kube::FakeClock clock;
  kube::WorkQueue queue{clock};
  std::ostringstream out;
  Logger log{out, LogFormat::Text, LogLevel::Info, clock};
  OperatorMetrics metrics;
  RecordingRecorder recorder;
  ReconcileFailures failures{queue, log, metrics, recorder};
  const kube::Object job = mpijob::testing::pi_job();
  const std::string key = kube::object_key(job);
};

TEST_F(ReconcileFailuresTest, RetryableIsRequeuedWithGrowingBackoff) {
  for (int i = 1; i <= 3; ++i) {
    queue.add(key);
    take(key);
    EXPECT_EQ(failures.handle(key, std::make_exception_ptr(kube::ApiError(503, "ServiceUnavailable",
                                                                          "etcd is away")),
                              &job),
              FailureClass::Retryable);
    queue.done(key);
    EXPECT_EQ(queue.num_requeues(key), i);
    EXPECT_EQ(queue.waiting(), 1u) << "a retryable failure must come back after its backoff";
  }
  take(key);  // due after the backoff, with nothing else adding it
  queue.done(key);
  EXPECT_EQ(metrics.retryable_errors(), 3u);
  EXPECT_EQ(metrics.permanent_errors(), 0u);
  EXPECT_TRUE(recorder.with_reason(kReasonReconcileFailed).empty());
  const std::string text = out.str();
  EXPECT_NE(text.find("msg=\"reconcile failed; requeued with backoff\" mpijob=" + key +
                      " reason=\"ServiceUnavailable (HTTP 503)\" error=\"etcd is away\" requeues=2"),
            std::string::npos)
      << text;
}

TEST_F(ReconcileFailuresTest, PermanentIsOnlyRecheckedAfterFiveMinutesAndForgetsTheBackoff) {
  // Two retryable failures build up backoff history first.
  for (int i = 0; i < 2; ++i) {
    queue.add(key);
    take(key);
    failures.handle(key, std::make_exception_ptr(kube::ApiError(0, "ConnectionFailed", "reset")),
                    &job);
    queue.done(key);
  }
  take(key);  // the backoff retry
  EXPECT_EQ(failures.handle(key, std::make_exception_ptr(invalid_pod("pi-worker-0")), &job),
            FailureClass::Permanent);
  queue.done(key);
  EXPECT_EQ(queue.num_requeues(key), 0) << "the key's backoff history must be forgotten";
  EXPECT_EQ(queue.len(), 0u);
  EXPECT_EQ(queue.waiting(), 1u) << "a permanent failure must be checked again, late";
  clock.advance(kPermanentRecheck - std::chrono::seconds(1));
  EXPECT_EQ(queue.len(), 0u) << "a permanent failure must not come back before 5 minutes";
  // The next change of the MPIJob (an informer event) reconciles it at once, from no backoff.
  queue.add(key);
  EXPECT_EQ(queue.len(), 1u);
  ASSERT_EQ(queue.get(), key);
  queue.done(key);
  // With nothing changed, the recheck hands it out once the 5 minutes are over: a fix made
  // outside the job (a RoleBinding, a service account) is noticed without touching the MPIJob.
  clock.advance(std::chrono::seconds(1));
  EXPECT_EQ(queue.len(), 1u);
  EXPECT_EQ(queue.get(), key);
  queue.done(key);

  EXPECT_EQ(metrics.permanent_errors(), 1u);
  EXPECT_EQ(metrics.retryable_errors(), 2u);
  const std::string rendered = metrics.render();
  EXPECT_NE(rendered.find("mpi_operator_reconcile_errors_total{class=\"permanent\"} 1\n"),
            std::string::npos) << rendered;
  EXPECT_NE(rendered.find("mpi_operator_reconcile_errors_total{class=\"retryable\"} 2\n"),
            std::string::npos) << rendered;

  const auto events = recorder.with_reason(kReasonReconcileFailed);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].rfind(key + ": Warning: reconcile failed permanently; retried when the "
                                  "MPIJob or an object it owns changes, or in 5 minutes: Invalid (HTTP 422) on "
                                  "spec.containers[0].resources.requests[nvidia.com/gpu]: Pod "
                                  "\"pi-worker-0\" is invalid",
                            0),
            0u)
      << events[0];
  const std::string text = out.str();
  size_t lines = 0;
  for (size_t at = 0; (at = text.find("reconcile failed permanently", at)) != std::string::npos;
       ++at) {
    ++lines;
  }
  EXPECT_EQ(lines, 1u) << text;
  EXPECT_NE(text.find(" level=error msg=\"reconcile failed permanently; retried when the MPIJob "
                      "or an object it owns changes, or in 5 minutes\" mpijob=" + key +
                      " reason=\"Invalid (HTTP 422) on "
                      "spec.containers[0].resources.requests[nvidia.com/gpu]\""),
            std::string::npos)
      << text;
}

TEST_F(ReconcileFailuresTest, AFailureOfADeletedJobIsHandledWithoutAnEvent) {
  queue.add(key);
  take(key);
  EXPECT_EQ(failures.handle(key, std::make_exception_ptr(invalid_pod("pi-worker-0")), nullptr),
            FailureClass::Permanent);
  queue.done(key);
  EXPECT_EQ(queue.waiting(), 1u);
  clock.advance(kPermanentRecheck);
  take(key);
  EXPECT_EQ(failures.handle(key, std::make_exception_ptr(std::logic_error("?")), nullptr),
            FailureClass::Retryable);
  queue.done(key);
  EXPECT_EQ(queue.waiting(), 1u);
  EXPECT_TRUE(recorder.with_reason(kReasonReconcileFailed).empty());
}

// End to end through the Manager: worker pods are refused while `refuse` returns an error.
class ManagerFailuresTest : public ::testing::Test {
 protected:
  ManagerFailuresTest() {
    client.set_failure_hook([this](const kube::Request& r) -> std::optional<kube::ApiError> {
      if (r.verb != kube::Verb::Create || r.resource != kPods) return std::nullopt;
      std::lock_guard lock(mu);
      return refuse ? refuse(r.name) : std::nullopt;
    });
    kube::Object job = mpijob::testing::pi_job(3);
    job["metadata"].erase("uid");
    client.create(mpijob::kMPIJobs, "default", job);
  }
  void start() {
    ManagerOptions o;
    o.namespaces = {"default"};
    o.recorder = &recorder;
    o.metrics = &metrics;
    o.log = &log;
    o.keys = &keys;
    manager = std::make_unique<Manager>(client, o, clock);
    run = std::jthread([this](std::stop_token st) { manager->run(st); });
  }
  void set_refuse(std::function<std::optional<kube::ApiError>(const std::string&)> f) {
    std::lock_guard lock(mu);
    refuse = std::move(f);
  }
  static bool eventually(const std::function<bool()>& pred) {
    for (int i = 0; i < 400; ++i) {
      if (pred()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    return pred();
  }
  bool workers_exist() {
    try {
      client.get(kPods, "default", "pi-worker-2");
      return true;
    } catch (const kube::ApiError&) {
      return false;
    }
  }

  kube::MemoryClient client;
  kube::RealClock clock;
  std::mutex mu;
  std::function<std::optional<kube::ApiError>(const std::string&)> refuse;  // guarded by mu
  RecordingRecorder recorder;
  OperatorMetrics metrics;
  std::ostringstream out;  // read only once the manager stopped
  Logger log{out, LogFormat::Text, LogLevel::Warning, clock};
  mpijob::testing::FixedKeyGenerator keys;
  std::unique_ptr<Manager> manager;
  std::jthread run;  // declared last: stops (and joins) the manager first
};

TEST_F(ManagerFailuresTest, PermanentRefusalWaitsForAChangeOfTheMPIJob) {
  set_refuse([](const std::string& name) { return invalid_pod(name); });
  start();
  ASSERT_TRUE(eventually([&] { return !recorder.with_reason(kReasonReconcileFailed).empty(); }));
  // Let the reconciles the job's own writes bring (status, Service, ConfigMap, Secret) settle.
  // One of them may meet a write conflict (a status written from a cache a write behind: 409,
  // retryable, retried with backoff): quiet means neither count moves.
  std::pair<uint64_t, uint64_t> seen{0, 0};
  int quiet_polls = 0;
  ASSERT_TRUE(eventually([&] {
    const std::pair<uint64_t, uint64_t> now{metrics.permanent_errors(), metrics.retryable_errors()};
    quiet_polls = now == seen && manager->queue_depth() == 0 ? quiet_polls + 1 : 0;
    seen = now;
    return quiet_polls >= 8;  // 200 ms without another reconcile
  }));
  const uint64_t retryable = metrics.retryable_errors();
  set_refuse(nullptr);
  // A requeue with backoff would now create the pods; a permanent failure waits for a change.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_FALSE(workers_exist());
  EXPECT_EQ(metrics.retryable_errors(), retryable) << "the refused pod was retried";
  EXPECT_GE(metrics.permanent_errors(), 1u);

  kube::Object job = client.get(mpijob::kMPIJobs, "default", "pi");
  job["metadata"]["annotations"]["example.com/fixed"] = "gpu request";
  client.update(mpijob::kMPIJobs, "default", job);
  EXPECT_TRUE(eventually([&] { return workers_exist(); }))
      << "the MPIJob's update must reconcile it again";
  run.request_stop();
  run.join();
  EXPECT_NE(out.str().find("mpijob=default/pi reason=\"Invalid (HTTP 422) on "
                           "spec.containers[0].resources.requests[nvidia.com/gpu]\""),
            std::string::npos)
      << out.str();
}

TEST_F(ManagerFailuresTest, RetryableFailureIsRetriedWithNothingChanged) {
  set_refuse([](const std::string&) {
    return kube::ApiError(503, "ServiceUnavailable", "etcd leader changed");
  });
  start();
  ASSERT_TRUE(eventually([&] { return metrics.retryable_errors() >= 4; }));
  // Past the reconciles the job's own writes bring: from here only the backoff retries it.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  set_refuse(nullptr);
  EXPECT_TRUE(eventually([&] { return workers_exist(); }))
      << "a retryable failure must be retried without any change";
  EXPECT_EQ(metrics.permanent_errors(), 0u);
  EXPECT_TRUE(recorder.with_reason(kReasonReconcileFailed).empty());
}

}  // namespace
}  // namespace controller
