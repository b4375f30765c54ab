// Chaos with nothing lost: 20 MPIJob lifecycles per test while the control plane misbehaves at
// random moments (the API server or etcd SIGKILLed and restarted, the operator's connections
// cut, the API server replaced behind them so resumed watches get 410 Gone). The operator runs
// throughout, talking to the API server through a proxy (chaos_proxy.h); the test plays the
// kubelet (lifecycle_driver.h). Each job goes: created, workers Running, launcher Running,
// launcher Succeeded, deleted. The faults go on until every job is gone; then, per job:
//   - converged: the status seen once the launcher succeeded has Created True, Running False,
//     Succeeded True, completionTime, and the launcher counted as succeeded;
//   - no duplicates: while it ran, exactly one Service, ConfigMap, Secret, launcher Job and
//     NetworkPolicy, and exactly N worker pods, carried its uid as owner;
//   - no orphans: after its deletion nothing it owned is left (the garbage collector removed
//     it all, launcher pods included);
//   - no event missed: its Normal Events MPIJobCreated, MPIJobRunning and MPIJobSucceeded
//     each exist with a summed count of exactly 1: every transition reported, none twice
//     (an Event create or a status write whose answer was lost must neither drop nor repeat
//     one). Watch events the operator missed would show as a job that does not converge.
// KOROVOD_CHAOS_SEED=<n> replays a run's random choices (the seed is printed).
#include <atomic>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "../kube/cluster.h"
#include "../operator/fixture.h"
#include "chaos_proxy.h"
#include "control_plane.h"
#include "lifecycle_driver.h"

namespace chaos {
namespace {

using namespace std::chrono_literals;
using optest::OperatorProcess;

constexpr int kJobs = 20;
constexpr int kWorkers = 2;

uint32_t seed_for_run() {
  if (const char* s = std::getenv("KOROVOD_CHAOS_SEED"); s && *s) return std::stoul(s);
  return std::random_device{}();
}

int count_in(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// One kind of fault: what it does and how long to wait before the next one.
struct Fault {
  std::string name;
  std::function<void(std::mt19937&)> inject;
  int min_gap_ms, max_gap_ms;
};

class OperatorChaos : public optest::OperatorTest {
 protected:
  void SetUp() override {
    OperatorTest::SetUp();
    if (IsSkipped()) return;
    seed_ = seed_for_run();
    std::cerr << "KOROVOD_CHAOS_SEED=" << seed_ << "\n";
    plane_.ensure_up();  // an earlier test that failed half way may have left a component down
    proxy_ = std::make_unique<ChaosProxy>(plane_.apiserver_port());
    // KOROVOD_CHAOS_DIRECT=1: the operator talks to the API server itself (to tell the proxy's
    // part from the API server's when debugging).
    const char* direct = std::getenv("KOROVOD_CHAOS_DIRECT");
    const int port = direct && *direct == '1' ? plane_.apiserver_port() : proxy_->port();
    const std::string kubeconfig = plane_.kubeconfig_via(port, "chaos-" + ns());
    op_ = std::make_unique<OperatorProcess>(
        optest::operator_args(ns(), {"--network-policy=on"}), "chaos-" + ns(),
        std::vector<std::string>{"KUBECONFIG=" + kubeconfig});
  }
  void TearDown() override {
    try {
      plane_.ensure_up();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "the control plane did not come back: " << e.what();
    }
    OperatorTest::TearDown();
    proxy_.reset();
  }

  Fault api_server_restart() {
    return {"kube-apiserver restart",
            [this](std::mt19937& rng) {
              plane_.crash_and_restart("kube-apiserver", std::chrono::milliseconds(rng() % 1500));
            },
            500, 3000};
  }
  Fault etcd_restart() {
    return {"etcd restart",
            [this](std::mt19937& rng) {
              plane_.crash_and_restart("etcd", std::chrono::milliseconds(rng() % 2000));
            },
            500, 3000};
  }
  Fault controller_manager_restart() {
    return {"kube-controller-manager restart",
            [this](std::mt19937& rng) {
              plane_.crash_and_restart("kube-controller-manager", std::chrono::milliseconds(rng() % 1000));
            },
            1000, 4000};
  }
  // Cuts every connection or a random half. Every third time the API server behind the proxy
  // is SIGKILLed and started again while the operator's watches are cut: its new watch cache
  // starts at the current revision, so the watches, resumed from older resourceVersions, are
  // answered 410 Gone ("too old resource version") and the informers must relist. That is how
  // 410 reaches clients here: compacting etcd alone does not do it, because the watch cache,
  // not etcd, serves these watches (and an etcd restart under cut watches gave none in our runs).
  Fault watch_cut() {
    return {"connections cut",
            [this](std::mt19937& rng) {
              if (++cuts_ % 3 == 0) {
                proxy_->cut(rng, 1.0);
                plane_.crash_and_restart("kube-apiserver", std::chrono::milliseconds(rng() % 1000));
                ++api_restarts_;
                return;
              }
              proxy_->cut(rng, rng() % 2 ? 1.0 : 0.5);
            },
            300, 1500};
  }

  // Runs kJobs lifecycles while `fault_count` faults (picked at random from `faults`) happen
  // at random moments; then the jobs must finish without more faults, and everything is
  // checked. (Faults without end would, on a slow machine, keep the API server down more than
  // up: each restart takes seconds.)
  void run(const std::vector<Fault>& faults, int fault_count) {
    std::atomic<int> injected{0};
    std::atomic<bool> stop{false};
    std::map<std::string, int> by_kind;
    std::atomic<bool> injector_failed{false};
    std::string injector_error;  // written before injector_failed is set
    LifecycleDriver driver(c(), ns(), kJobs, kWorkers, seed_, [&] {
      return injected.load() >= fault_count || injector_failed ? -1 : injected.load();
    });
    const auto t0 = Clock::now();
    std::thread injector([&] {
      std::mt19937 rng(seed_ + 1);
      while (!stop && injected < fault_count) {
        const Fault& f = faults[rng() % faults.size()];
        const auto gap = std::chrono::milliseconds(
            f.min_gap_ms + rng() % (f.max_gap_ms - f.min_gap_ms + 1));
        for (auto until = Clock::now() + gap; !stop && Clock::now() < until;) {
          std::this_thread::sleep_for(20ms);
        }
        if (stop) break;
        try {
          f.inject(rng);
        } catch (const std::exception& e) {
          injector_error = e.what();
          injector_failed = true;
          return;
        }
        ++by_kind[f.name];
        ++injected;
        const auto wall = std::chrono::system_clock::now().time_since_epoch();
        std::cerr << std::fixed << std::setprecision(3) << "fault " << injected << " (" << f.name << ") done at unix "
                  << std::chrono::duration<double>(wall).count() << "\n";
      }
    });
    // Every job must go through its lifecycle within 4 minutes.
    bool done = false;
    auto next_report = Clock::now() + 15s;
    while ((!done || injected < fault_count) && Clock::now() - t0 < 240s && !injector_failed) {
      done = driver.round();
      if (Clock::now() > next_report) {
        std::cerr << "after " << std::chrono::duration<double>(Clock::now() - t0).count()
                  << " s, " << injected << " faults: " << driver.progress() << "\n";
        next_report += 15s;
      }
      std::this_thread::sleep_for(200ms);
    }
    stop = true;
    injector.join();
    const double chaos_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    ASSERT_TRUE(injector_error.empty()) << injector_error;
    plane_.ensure_up();
    ASSERT_TRUE(done) << "not every job went through its lifecycle in 240 s: " << driver.progress();
    ASSERT_TRUE(op_->running()) << "the operator exited";
    EXPECT_EQ(injected.load(), fault_count);

    check_records(driver.jobs());
    check_events(driver.jobs());
    check_no_orphans(driver.jobs());

    const std::string log = op_->log();
    // Every fault here passes by itself (and a namespace made a moment ago has no service
    // account yet): nothing the operator met may count as permanent, or a job would wait for
    // an edit that never comes.
    const size_t permanent = log.find("reconcile failed permanently");
    EXPECT_EQ(permanent, std::string::npos)
        << "the operator called a failure permanent: "
        << log.substr(permanent == std::string::npos ? 0 : permanent, 600);
    double slowest = 0;
    for (const auto& j : driver.jobs()) slowest = std::max(slowest, j.seconds_to_gone);
    std::cerr << kJobs << " lifecycles in " << chaos_seconds << " s (slowest " << slowest
              << " s) under " << injected << " faults:";
    for (const auto& [k, n] : by_kind) std::cerr << " " << n << " x " << k << ";";
    std::cerr << " proxy: " << proxy_->accepted() << " connections, " << proxy_->cut_total()
              << " cut; operator log: "
              << count_in(log, "watch failed") << " watch failures, "
              << count_in(log, "410 Expired") << " of them 410 Gone, "
              << count_in(log, "reconcile failed") << " failed reconciles, "
              << count_in(log, "event not recorded") << " events not recorded at first; "
              << driver.api_errors() << " of the test's own calls redone\n";
  }

  void check_records(const std::vector<JobRecord>& jobs) {
    for (const auto& j : jobs) {
      for (const char* r : {"services", "configmaps", "secrets", "jobs", "networkpolicies"}) {
        const auto it = j.owned_while_running.find(r);
        EXPECT_EQ(it == j.owned_while_running.end() ? 0 : it->second, 1) << j.name << ": " << r;
      }
      const auto pods = j.owned_while_running.find("pods");
      EXPECT_EQ(pods == j.owned_while_running.end() ? 0 : pods->second, j.workers)
          << j.name << ": worker pods owned";
      EXPECT_EQ(j.worker_pods_while_running, j.workers) << j.name << ": worker pods labelled";
      const kube::Object job = {{"status", j.final_status}};
      for (auto [type, want] : {std::pair{"Created", "True"}, std::pair{"Running", "False"},
                                std::pair{"Succeeded", "True"}}) {
        const auto cond = optest::condition(job, type);
        EXPECT_TRUE(cond && cond->value("status", "") == want)
            << j.name << ": condition " << type << " in " << j.final_status.dump();
      }
      EXPECT_TRUE(j.final_status.contains("completionTime")) << j.name;
      EXPECT_EQ(j.final_status["replicaStatuses"]["Launcher"].value("succeeded", 0), 1)
          << j.name << ": " << j.final_status.dump();
    }
  }

  // Each transition reported exactly once. Events are written after the status, so give them
  // a moment to arrive.
  void check_events(const std::vector<JobRecord>& jobs) {
    for (const auto& j : jobs) {
      std::map<std::string, int> normal;
      auto tally = [&] {
        normal.clear();
        for (const auto& e : optest::events_for(c(), ns(), j.name)) {
          if (e.value("type", "") == "Normal") normal[e.value("reason", "")] += e.value("count", 1);
        }
        return normal["MPIJobCreated"] >= 1 && normal["MPIJobRunning"] >= 1 &&
               normal["MPIJobSucceeded"] >= 1;
      };
      optest::wait_for(tally, 30s);
      for (const char* reason : {"MPIJobCreated", "MPIJobRunning", "MPIJobSucceeded"}) {
        EXPECT_EQ(normal[reason], 1) << j.name << ": " << reason << " events";
      }
    }
  }

  // Everything the jobs owned is gone: the launcher Jobs and their pods too.
  void check_no_orphans(const std::vector<JobRecord>& jobs) {
    std::set<std::string> uids;
    for (const auto& j : jobs) uids.insert(j.uid);
    std::vector<std::string> left;
    auto nothing_left = [&] {
      left.clear();
      for (const auto& r : owned_resources()) {
        for (const auto& o : c().list(r, ns(), {}).items) {
          bool ours = r.resource == "pods" || r.resource == "jobs";  // nothing else makes them here
          for (const auto& ref : o["metadata"].value("ownerReferences", kube::Object::array())) {
            ours = ours || uids.count(ref.value("uid", ""));
          }
          if (ours) left.push_back(r.resource + "/" + kube::name_of(o));
        }
      }
      return left.empty();
    };
    EXPECT_TRUE(optest::wait_for(nothing_left, 90s)) << "left after the jobs were deleted: "
                                                    << ::testing::PrintToString(left);
  }

  ControlPlane plane_;
  std::unique_ptr<ChaosProxy> proxy_;
  uint32_t seed_ = 0;
  int cuts_ = 0, api_restarts_ = 0;  // by the injector thread only
};

TEST_F(OperatorChaos, ApiServerRestartsDuringTwentyLifecycles) {
  run({api_server_restart()}, 5);
}

TEST_F(OperatorChaos, EtcdRestartsDuringTwentyLifecycles) {
  run({etcd_restart()}, 5);
}

TEST_F(OperatorChaos, WatchCutsAndGoneDuringTwentyLifecycles) {
  run({watch_cut()}, 9);
  ASSERT_GE(api_restarts_, 1);
  // The operator logs each failed watch with the API server's answer.
  EXPECT_GE(count_in(op_->log(), "410 Expired"), 1)
      << "the API server restarted " << api_restarts_ << " times under cut watches, but no watch got 410 Gone";
}

TEST_F(OperatorChaos, EverythingAtOnceDuringTwentyLifecycles) {
  run({api_server_restart(), etcd_restart(), controller_manager_restart(), watch_cut()}, 8);
}

}  // namespace
}  // namespace chaos
