// Crash safety: kill -9 the operator at random points while 20 MPIJobs go through their
// lifecycle; after the last restart every job converges, with no duplicate or orphaned objects.
#include <atomic>
#include <csignal>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "fixture.h"

namespace optest {
namespace {

using namespace std::chrono_literals;

class Crash : public OperatorTest {};

TEST_F(Crash, KillNineDuringTwentyLifecycles) {
  constexpr int kJobs = 20;
  const char* policies[] = {"Running", "All", "None"};
  std::atomic<bool> stop{false};
  std::atomic<int> kills{0};
  std::mutex mu;
  std::unique_ptr<OperatorProcess> op;  // GUARDED_BY(mu)
  std::string logs;
  auto start = [&] {
    std::lock_guard lock(mu);
    op = std::make_unique<OperatorProcess>(operator_args(ns()), "crash-" + ns());
  };
  start();
  // Whether the running operator has synced its caches and started its workers.
  auto working = [&] {
    std::lock_guard lock(mu);
    return op->log().find("caches synced; starting workers") != std::string::npos;
  };
  std::thread killer([&] {
    std::mt19937 rng(std::random_device{}());
    for (int round = 0; !stop; ++round) {
      if (round % 3 == 2) {
        // Every third kill lands in the start itself (listing, syncing, the first reconciles).
        std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 300));
      } else {
        // The others 0.3-2 s into its work: counted from when it works, not from its start, so
        // an operator that starts slowly (a sanitized build on a loaded machine) still makes
        // progress between kills.
        for (int i = 0; i < 600 && !stop && !working(); ++i) std::this_thread::sleep_for(100ms);
        std::this_thread::sleep_for(std::chrono::milliseconds(300 + rng() % 1700));
      }
      if (stop) break;
      std::lock_guard lock(mu);
      op->signal(SIGKILL);
      op->wait(10s);
      ++kills;
      op = std::make_unique<OperatorProcess>(operator_args(ns()), "crash-" + ns());
    }
  });

  for (int i = 0; i < kJobs; ++i) {
    create({.name = "c" + std::to_string(i), .workers = 2, .clean_pod_policy = policies[i % 3]});
  }
  // Play kubelet until every job succeeded: workers Running, then the launcher Succeeded.
  std::set<std::string> done;
  const auto deadline = std::chrono::steady_clock::now() + 180s;
  while (done.size() < kJobs && std::chrono::steady_clock::now() < deadline) {
    for (int i = 0; i < kJobs; ++i) {
      const std::string job = "c" + std::to_string(i);
      if (done.count(job)) continue;
      if (has_condition(c(), ns(), job, "Succeeded")) {
        done.insert(job);
        continue;
      }
      try {
        auto workers = worker_pods(c(), ns(), job);
        for (const auto& p : workers) {
          if (p["status"].value("phase", "Pending") == "Pending") {
            set_pod_phase(c(), ns(), kube::name_of(p), "Running");
          }
        }
        if (workers.size() < 2) continue;
        // Job i's launcher may succeed only after i % 6 kills, so job completions (and their
        // cleanups) are spread across operator restarts even when the machine is fast.
        if (kills.load() < i % 6) continue;
        for (const auto& p : launcher_pods(c(), ns(), job)) {
          if (p["status"].value("phase", "Pending") == "Pending") {
            set_pod_phase(c(), ns(), kube::name_of(p), "Succeeded");
          }
        }
      } catch (const kube::ApiError&) {
        // a pod deleted between list and update; try again next round
      }
    }
    std::this_thread::sleep_for(200ms);
  }
  stop = true;
  killer.join();
  ASSERT_TRUE(op->running()) << op->log();
  EXPECT_EQ(done.size(), static_cast<size_t>(kJobs)) << "jobs that did not succeed in time";
  EXPECT_GE(kills.load(), 5);

  // Converged: each job's workers cleaned up per its policy, exactly one of each object.
  std::map<std::string, std::string> uid_of_job;
  for (const auto& j : c().list(kMPIJobs, ns(), {}).items) uid_of_job[kube::name_of(j)] = kube::uid_of(j);
  ASSERT_EQ(uid_of_job.size(), static_cast<size_t>(kJobs));
  for (int i = 0; i < kJobs; ++i) {
    const std::string job = "c" + std::to_string(i);
    const size_t expect_workers = std::string(policies[i % 3]) == "None" ? 2 : 0;
    EXPECT_TRUE(wait_for([&] { return worker_pods(c(), ns(), job).size() == expect_workers; }, 60s))
        << job << " has " << worker_pods(c(), ns(), job).size() << " workers";
    int succeeded_events = 0;
    for (const auto& e : events_for(c(), ns(), job)) {
      // Repeats of one event are aggregated into its count (kube::EventRecorder).
      if (e.value("reason", "") == "MPIJobSucceeded") succeeded_events += e.value("count", 1);
    }
    EXPECT_LE(succeeded_events, 1) << job << ": a transition reported twice";
  }
  // Every owned object belongs to a live MPIJob (no orphans), one per expected name (no dups).
  std::map<std::string, int> seen;
  for (const auto& r : {kube::resources::kServices, kube::resources::kConfigMaps,
                        kube::resources::kSecrets, kube::resources::kJobs,
                        kube::resources::kPods}) {
    for (const auto& o : c().list(r, ns(), {}).items) {
      for (const auto& ref : o["metadata"].value("ownerReferences", kube::Object::array())) {
        if (ref.value("kind", "") != "MPIJob") continue;
        const std::string owner = ref.value("name", "");
        ASSERT_TRUE(uid_of_job.count(owner)) << r.resource << " " << kube::name_of(o) << " orphaned";
        EXPECT_EQ(ref.value("uid", ""), uid_of_job[owner]) << kube::name_of(o);
        ++seen[r.resource + "/" + owner];
      }
    }
  }
  for (const auto& [job, uid] : uid_of_job) {
    for (const char* r : {"services", "configmaps", "secrets", "jobs"}) {
      EXPECT_EQ(seen[std::string(r) + "/" + job], 1) << r << " of " << job;
    }
  }
  std::cerr << "operator killed " << kills.load() << " times\n";
  std::lock_guard lock(mu);
  if (HasFailure()) std::cerr << op->log().substr(0, 8000);
}

}  // namespace
}  // namespace optest
