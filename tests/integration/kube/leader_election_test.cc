// kube::LeaderElector between two candidates (each with its own RestClient, as two operator
// replicas would be) on a real Lease: exactly one leads, and the other takes over after the
// leader stops, within the lease duration when it vanished and at once when it released.
#include "kube/leader_election.h"

#include <gtest/gtest.h>

#include <thread>

#include "cluster.h"

namespace kube::testing {
namespace {
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

class Candidate {
 public:
  Candidate(const std::string& ns, const std::string& lease, const std::string& identity,
            bool release_on_stop, std::chrono::seconds lease_duration = 3s)
      : client_(make_client()) {
    LeaderElectionConfig c;
    c.lease_namespace = ns;
    c.lease_name = lease;
    c.identity = identity;
    c.lease_duration = lease_duration;
    c.renew_deadline = lease_duration * 2 / 3;
    c.retry_period = 1s;
    c.release_on_stop = release_on_stop;
    c.on_started_leading = [] {};
    c.on_stopped_leading = [] {};
    elector_ = std::make_unique<LeaderElector>(*client_, c, clock_);
    thread_ = std::thread([this] { elector_->run(); });
  }
  ~Candidate() { stop(); }
  // Stops campaigning; without release this looks to the other candidate like a crash.
  void stop() {
    elector_->stop();
    if (thread_.joinable()) thread_.join();
  }
  bool leads() const { return elector_->is_leader(); }

 private:
  RealClock clock_;
  std::unique_ptr<RestClient> client_;
  std::unique_ptr<LeaderElector> elector_;
  std::thread thread_;
};

std::string holder(RestClient& client, const std::string& ns, const std::string& lease) {
  return client.get(resources::kLeases, ns, lease)["spec"].value("holderIdentity", "");
}

// Runs two candidates until one leads and checks they never both lead for `observe`.
// Returns the index of the leader.
int single_leader(Candidate& a, Candidate& b, std::chrono::milliseconds observe) {
  EXPECT_TRUE(eventually([&] { return a.leads() || b.leads(); }, 15s)) << "nobody leads";
  const auto until = Clock::now() + observe;
  while (Clock::now() < until) {
    EXPECT_FALSE(a.leads() && b.leads()) << "two leaders at once";
    std::this_thread::sleep_for(20ms);
  }
  return a.leads() ? 0 : 1;
}

class LeaderElectionIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_CLUSTER();
    client_ = make_client();
    ns_ = std::make_unique<TestNamespace>(*client_, "leader");
  }
  std::unique_ptr<RestClient> client_;
  std::unique_ptr<TestNamespace> ns_;
};

TEST_F(LeaderElectionIntegrationTest, OneLeadsAndTheOtherTakesOverWithinTheLeaseDuration) {
  std::unique_ptr<Candidate> c[2] = {
      std::make_unique<Candidate>(ns_->name(), "lock", "candidate-a", false),
      std::make_unique<Candidate>(ns_->name(), "lock", "candidate-b", false)};
  const int leader = single_leader(*c[0], *c[1], 3s);
  const int follower = 1 - leader;
  EXPECT_EQ(holder(*client_, ns_->name(), "lock"), leader == 0 ? "candidate-a" : "candidate-b");

  const auto stopped = Clock::now();
  c[leader]->stop();  // vanishes without releasing the lease
  ASSERT_TRUE(eventually([&] { return c[follower]->leads(); }, 10s));
  const auto takeover = Clock::now() - stopped;
  // Lease duration plus one retry period for the follower's next attempt, plus slack.
  EXPECT_LT(takeover, 3s + 1s + 1s) << "took "
                                    << std::chrono::duration_cast<std::chrono::milliseconds>(takeover).count()
                                    << " ms";
  EXPECT_EQ(holder(*client_, ns_->name(), "lock"), follower == 0 ? "candidate-a" : "candidate-b");
}

TEST_F(LeaderElectionIntegrationTest, ReleasedLeaseIsTakenWithoutWaitingForExpiry) {
  // A lease far longer than a release and the follower's next retry (1 s) take, even when every
  // request is slow (under ASan on a loaded machine a release took 4 s): taking over before it
  // could expire is then only possible through the release.
  constexpr auto kLease = 20s;
  std::unique_ptr<Candidate> c[2] = {
      std::make_unique<Candidate>(ns_->name(), "lock", "candidate-a", true, kLease),
      std::make_unique<Candidate>(ns_->name(), "lock", "candidate-b", true, kLease)};
  const int leader = single_leader(*c[0], *c[1], 1s);
  const auto stopped = Clock::now();
  c[leader]->stop();
  ASSERT_TRUE(eventually([&] { return c[1 - leader]->leads(); }, kLease));
  EXPECT_LT(Clock::now() - stopped, kLease);  // sooner than the lease could expire
}

}  // namespace
}  // namespace kube::testing
