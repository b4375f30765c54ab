// The reconciler against kube::MemoryClient: what it writes, that a steady state writes
// nothing, that foreign objects stay untouched, worker restarts, completion and TTL.
#include <gtest/gtest.h>

#include <atomic>

#include "kube/api_error.h"
#include "kube/fake_clock.h"
#include "kube/memory_client.h"
#include "mpijob/reconciler.h"
#include "kube/object_meta.h"
#include "mpijob/testing/fixtures.h"

namespace mpijob {
namespace {

using kube::resources::kConfigMaps;
using kube::resources::kJobs;
using kube::resources::kPods;

class RecordingRecorder final : public Recorder {
 public:
  void event(const kube::Object&, const Event& e) override { events.push_back(e); }
  void count(Counter c) override { counters.push_back(c); }
  bool has_event(const std::string& reason) const {
    for (const auto& e : events) {
      if (e.reason == reason) return true;
    }
    return false;
  }
  std::vector<Event> events;
  std::vector<Counter> counters;
};

class ReconcilerTest : public ::testing::Test {
 protected:
  ReconcilerTest() {
    client.set_request_observer([this](const kube::Request& r) {
      if (r.verb != kube::Verb::Get && r.verb != kube::Verb::List) ++writes;
    });
  }
  void create_job(kube::Object job) {
    job["metadata"].erase("uid");
    client.create(kMPIJobs, "default", job);
  }
  kube::Object job() { return client.get(kMPIJobs, "default", "pi"); }
  kube::Object get(const kube::Resource& r, const std::string& name) {
    return client.get(r, "default", name);
  }
  void set_pod_phase(const std::string& name, const std::string& phase) {
    kube::Object p = get(kPods, name);
    p["status"]["phase"] = phase;
    client.update_status(kPods, "default", p);
  }
  Result sync() { return reconciler.reconcile("default", "pi"); }

  kube::FakeClock clock;
  kube::MemoryClient client{clock};
  ClientCache cache{client};
  testing::FixedKeyGenerator keys;
  RecordingRecorder recorder;
  Reconciler reconciler{client, cache, keys, recorder, clock, ReconcilerOptions{}};
  // Counted by the request observer, which runs on the reconciler's parallel creation threads.
  std::atomic<int> writes{0};
};

TEST_F(ReconcilerTest, CreatesEverythingThenSteadyStateWritesNothing) {
  create_job(testing::pi_job());
  sync();
  for (auto [r, name] : std::vector<std::pair<kube::Resource, std::string>>{
           {kube::resources::kServices, "pi"}, {kConfigMaps, "pi-config"},
           {kube::resources::kSecrets, "pi-ssh"}, {kPods, "pi-worker-0"}, {kPods, "pi-worker-1"},
           {kJobs, "pi-launcher"}}) {
    EXPECT_EQ(kube::controller_uid(get(r, name)), kube::uid_of(job())) << name;
  }
  EXPECT_EQ(job()["status"]["conditions"][0]["reason"], "MPIJobCreated");
  EXPECT_TRUE(recorder.has_event("MPIJobCreated"));
  EXPECT_EQ(recorder.counters, std::vector<Counter>{Counter::JobsCreated});
  writes = 0;
  sync();
  EXPECT_EQ(writes.load(), 0) << "a synced job must not be written again";
  EXPECT_EQ(keys.calls, 1);
}

TEST_F(ReconcilerTest, ForeignObjectOfTheSameNameIsNotTouched) {
  kube::Object foreign = {{"apiVersion", "v1"},
                          {"kind", "ConfigMap"},
                          {"metadata", {{"name", "pi-config"}, {"namespace", "default"}}},
                          {"data", {{"mine", "yes"}}}};
  client.create(kConfigMaps, "default", foreign);
  create_job(testing::pi_job());
  EXPECT_THROW(sync(), ResourceExistsError);
  EXPECT_EQ(get(kConfigMaps, "pi-config")["data"], foreign["data"]);
  EXPECT_TRUE(recorder.has_event("ErrResourceExists"));
  EXPECT_THROW(get(kJobs, "pi-launcher"), kube::ApiError);
}

TEST_F(ReconcilerTest, FailedWorkerIsRecreatedAndCounted) {
  create_job(testing::pi_job());
  sync();
  const std::string old_uid = kube::uid_of(get(kPods, "pi-worker-1"));
  set_pod_phase("pi-worker-1", "Failed");
  sync();  // counts the failure, deletes the pod
  EXPECT_EQ(job()["status"]["restartCount"], 1);
  EXPECT_EQ(job()["status"]["conditions"].back()["type"], "Restarting");
  EXPECT_TRUE(recorder.has_event("MPIJobRestarting"));
  sync();  // recreates it
  EXPECT_NE(kube::uid_of(get(kPods, "pi-worker-1")), old_uid);
  EXPECT_EQ(job()["status"]["restartCount"], 1);
}

TEST_F(ReconcilerTest, LauncherSuccessCleansUpRunningWorkersAndTtlDeletesTheJob) {
  create_job(testing::pi_job());  // ttlSecondsAfterFinished: 60
  sync();
  set_pod_phase("pi-worker-0", "Running");
  set_pod_phase("pi-worker-1", "Running");
  kube::Object launcher = get(kJobs, "pi-launcher");
  launcher["status"] = {{"conditions", {{{"type", "Complete"}, {"status", "True"}}}},
                        {"completionTime", kube::format_time(clock.now())}};
  client.update_status(kJobs, "default", launcher);
  sync();
  EXPECT_EQ(job()["status"]["conditions"].back()["type"], "Succeeded");
  EXPECT_EQ(recorder.counters.back(), Counter::JobsSuccessful);
  Result r = sync();  // finished: cleanPodPolicy Running deletes the running workers
  EXPECT_THROW(get(kPods, "pi-worker-0"), kube::ApiError);
  ASSERT_TRUE(r.requeue_after.has_value());
  clock.advance(std::chrono::seconds(61));
  sync();
  EXPECT_THROW(job(), kube::ApiError);
}

TEST_F(ReconcilerTest, ManagedByMultiKueueIsLeftAlone) {
  kube::Object j = testing::pi_job();
  j["spec"]["runPolicy"]["managedBy"] = "kueue.x-k8s.io/multikueue";
  create_job(j);
  writes = 0;
  sync();
  EXPECT_EQ(writes.load(), 0);
  EXPECT_FALSE(job().contains("status"));
}

TEST_F(ReconcilerTest, WorkerCreationFailureRecordsAnEvent) {
  create_job(testing::pi_job());
  client.set_failure_hook([](const kube::Request& r) -> std::optional<kube::ApiError> {
    if (r.verb == kube::Verb::Create && r.resource == kPods) {
      return kube::ApiError(403, "Forbidden",
                            "pods \"" + r.name + "\" is forbidden: exceeded quota: gpu");
    }
    return std::nullopt;
  });
  try {
    sync();
    FAIL() << "a refused worker pod must fail the sync";
  } catch (const kube::ApiError& e) {
    EXPECT_FALSE(kube::is_permanent(e)) << "quota frees up by itself: " << e.what();
  }
  ASSERT_TRUE(recorder.has_event("MPIJobFailed"));
  EXPECT_NE(recorder.events.back().message.find("worker pod created failed"), std::string::npos);
}

// The controller classifies what reconcile() throws: the API server's answer must come out of
// the parallel pod creation unchanged (code, reason, rejected fields), not wrapped or sliced.
TEST_F(ReconcilerTest, RefusedWorkerPodThrowsTheApiServersErrorUnchanged) {
  create_job(testing::pi_job(8));
  std::atomic<int> refused{0};
  client.set_failure_hook([&](const kube::Request& r) -> std::optional<kube::ApiError> {
    if (r.verb != kube::Verb::Create || r.resource != kPods) return std::nullopt;
    ++refused;
    kube::ApiError e(422, "Invalid", "Pod \"" + r.name + "\" is invalid: spec.containers[0]."
                                     "image: Required value");
    e.fields = {"spec.containers[0].image"};
    return e;
  });
  try {
    sync();
    FAIL() << "a refused worker pod must fail the sync";
  } catch (const kube::ApiError& e) {
    EXPECT_EQ(e.code(), 422);
    EXPECT_EQ(e.reason(), "Invalid");
    EXPECT_EQ(e.fields, std::vector<std::string>{"spec.containers[0].image"});
    EXPECT_TRUE(kube::is_permanent(e));
  }
  EXPECT_EQ(refused.load(), 8) << "every worker is tried once per sync";
  EXPECT_THROW(get(kJobs, "pi-launcher"), kube::ApiError) << "no launcher without workers";
  // What was written before the refusal stays: the next sync starts from there.
  EXPECT_EQ(job()["status"]["conditions"][0]["reason"], "MPIJobCreated");
  EXPECT_NO_THROW(get(kConfigMaps, "pi-config"));
}

// Profiles (profile.h): read through the client once, at the job's first sync; pinned after.
class ReconcilerProfileTest : public ReconcilerTest {
 protected:
  ReconcilerProfileTest() {
    client.set_request_observer([this](const kube::Request& r) {
      if (r.verb == kube::Verb::Get && r.resource == kConfigMaps && r.name == "korovod-profiles") {
        ++profile_reads;
      }
    });
    client.create(kConfigMaps, "korovod-system",
                  {{"metadata", {{"name", "korovod-profiles"}}},
                   {"data", {{"cpu", R"({"image": "train:1", "nodeSelector": {"pool": "cpu"}})"}}}});
  }
  static ReconcilerOptions with_profiles() {
    ReconcilerOptions o;
    o.profiles_namespace = "korovod-system";
    o.profiles_name = "korovod-profiles";
    return o;
  }
  void create_profiled_job(const std::string& profile) {
    kube::Object j = testing::pi_job();
    j["metadata"]["annotations"][kAnnotationProfile] = profile;
    j["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0].erase("image");
    create_job(j);
  }
  Reconciler profiled{client, cache, keys, recorder, clock, with_profiles()};
  std::atomic<int> profile_reads{0};
};

TEST_F(ReconcilerProfileTest, ReadsTheProfileOnceAndRecreatedPodsKeepThePinnedOne) {
  create_profiled_job("cpu");
  profiled.reconcile("default", "pi");
  EXPECT_EQ(profile_reads.load(), 1);
  EXPECT_EQ(job()["status"]["profile"]["name"], "cpu");
  EXPECT_EQ(get(kPods, "pi-worker-1")["spec"]["containers"][0]["image"], "train:1");
  EXPECT_EQ(get(kPods, "pi-worker-1")["spec"]["nodeSelector"]["pool"], "cpu");
  // The admin edits the profile; a worker pod is lost and recreated: it still matches its
  // siblings, and the ConfigMap is not read again.
  kube::Object cm = client.get(kConfigMaps, "korovod-system", "korovod-profiles");
  cm["data"]["cpu"] = R"({"image": "train:2"})";
  client.update(kConfigMaps, "korovod-system", cm);
  client.remove(kPods, "default", "pi-worker-1", {});
  profile_reads = 0;  // the test's own read above
  profiled.reconcile("default", "pi");
  EXPECT_EQ(get(kPods, "pi-worker-1")["spec"]["containers"][0]["image"], "train:1");
  EXPECT_EQ(profile_reads.load(), 0);
}

TEST_F(ReconcilerProfileTest, UnknownProfileFailsTheJobAndCreatesNothing) {
  create_profiled_job("gpu");
  profiled.reconcile("default", "pi");
  const kube::Object failed = job()["status"]["conditions"].back();
  EXPECT_EQ(failed["type"], "Failed");
  EXPECT_EQ(failed["reason"], "UnknownProfile");
  EXPECT_EQ(failed["message"], "metadata.annotations[korovod.io/profile]: profile \"gpu\" does "
                               "not exist; profiles: cpu");
  EXPECT_THROW(get(kPods, "pi-worker-0"), kube::ApiError);
  profiled.reconcile("default", "pi");  // a failed job does not read the profiles again
  EXPECT_EQ(profile_reads.load(), 1);
}

}  // namespace
}  // namespace mpijob
