// shm::Group's waits on the runtime's clock (rt_shm_group_test): one process maps two segments
// and plays both ranks of a two-rank group; when rank 1 never posts, the wait bound
// (KOROVOD_COLLECTIVE_TIMEOUT_SECONDS) is checked on a fake Env to the fraction of a second, in
// about 1.5 s of real time per bound (core/testing/bound_check.h). Several processes on real shared memory:
// worker-runtime/tests/mpi (rt_shm_*).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "core/testing/bound_check.h"
#include "core/testing/fake_env.h"
#include "transport/shm/shm_group.h"

namespace korovod::shm {
namespace {

using std::chrono::milliseconds;

// Both ranks of a two-rank group over two fresh segments (each rank maps both), on `env`.
std::pair<std::unique_ptr<Group>, std::unique_ptr<Group>> group_of_two(double wait_timeout_seconds,
                                                                       std::shared_ptr<const Env> env) {
  Geometry g;
  g.slot_bytes = 4096;
  g.slots = 2;
  g.wait_timeout_seconds = wait_timeout_seconds;
  std::vector<Segment> views[2];
  for (const char* who : {"a", "b"}) {
    const std::string name = fmt::format("/korovod-group-test-{}-{}", getpid(), who);
    Result<Segment> own = Segment::create(name, g.segment_bytes());
    Result<Segment> other = own.is_ok() ? Segment::open(name, g.segment_bytes()) : own.status();
    EXPECT_TRUE(other.is_ok()) << other.status().to_string();
    if (!other.is_ok()) return {};
    own->unlink();  // the mappings stay; nothing is left in /dev/shm
    views[0].push_back(std::move(own).value());
    views[1].push_back(std::move(other).value());
  }
  const std::vector<pid_t> pids{getpid(), getpid()};
  const std::vector<std::string> names{"rank 0 on host a", "rank 1 on host b"};
  return {std::make_unique<Group>(0, std::move(views[0]), pids, g, names, env),
          std::make_unique<Group>(1, std::move(views[1]), pids, g, names, env)};
}

// Rank 0 waiting for rank 1's first post, on a thread of its own.
struct BackgroundWait {
  explicit BackgroundWait(Group& g) : thread([this, &g] {
    status = g.wait(1, Counter::kPosted, 1);
    done = true;
  }) {}
  ~BackgroundWait() {
    if (thread.joinable()) thread.join();
  }
  std::atomic<bool> done{false};
  Status status;
  std::thread thread;  // last: starts once the fields above exist
};

TEST(ShmGroup, AWaitForAPeerThatNeverPostsEndsAtTheBoundOnTheEnvsClock) {
  auto env = std::make_shared<korovod::testing::FakeEnv>();
  auto [group, peer] = group_of_two(60, env);
  ASSERT_NE(group, nullptr);
  const Status s = korovod::testing::ends_at_bound(*env, milliseconds(60'000),
                                                   [&, &group = group] { return group->wait(1, Counter::kPosted, 1); });
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_NE(s.message().find("lost rank 1 on host b"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("did not arrive within 60 s"), std::string::npos) << s.message();
  EXPECT_TRUE(group->failed());
}

TEST(ShmGroup, APostEndsTheWaitWithoutTheClockMoving) {
  auto env = std::make_shared<korovod::testing::FakeEnv>();
  auto [group, peer] = group_of_two(60, env);
  ASSERT_NE(group, nullptr);
  BackgroundWait w(*group);
  std::this_thread::sleep_for(milliseconds(50));
  env->advance(std::chrono::seconds(30));  // past the spins and yields: asleep on the futex
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_FALSE(w.done.load());
  const auto posted = std::chrono::steady_clock::now();
  peer->post(Counter::kPosted, 1);  // rank 1's post wakes the sleeper on its counter
  w.thread.join();
  EXPECT_LT(std::chrono::steady_clock::now() - posted, milliseconds(500));
  EXPECT_TRUE(w.status.is_ok()) << w.status.to_string();
  EXPECT_FALSE(group->failed());
}

TEST(ShmGroup, APeerWhoseProcessIsGoneIsNamedAtTheNextLivenessLook) {
  auto env = std::make_shared<korovod::testing::FakeEnv>();
  auto [group, peer] = group_of_two(60, env);
  ASSERT_NE(group, nullptr);
  BackgroundWait w(*group);
  std::this_thread::sleep_for(milliseconds(100));  // waiting; its first look found rank 1 alive
  EXPECT_FALSE(w.done.load()) << w.status.to_string();
  env->set_process_gone(getpid());                   // both "ranks" are this process
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_FALSE(w.done.load()) << "looked again before the liveness period passed on the Env's clock";
  const auto looked = std::chrono::steady_clock::now();
  env->advance(milliseconds(25));  // past the 20 ms between looks
  for (int i = 0; i < 5000 && !w.done.load(); ++i) std::this_thread::sleep_for(milliseconds(1));
  EXPECT_TRUE(w.done.load()) << "the wait did not see rank 1's process gone";
  if (!w.done.load()) env->advance(std::chrono::hours(1));  // past the wait bound: ends the thread
  w.thread.join();
  EXPECT_LT(std::chrono::steady_clock::now() - looked, milliseconds(1000));
  EXPECT_EQ(w.status.code(), StatusCode::kAborted);
  EXPECT_NE(w.status.message().find(fmt::format("lost rank 1 on host b (pid {}): the process has died", getpid())),
            std::string::npos)
      << w.status.message();
  EXPECT_TRUE(group->failed());
}

TEST(ShmGroup, AnInterruptSaysWhetherANamedErrorIsComing) {
  // The watchdog's question: is a wait in progress, or has this rank's group failed already (a
  // rank stopped for a moment as its peers failed resumes with its wait's error on its way up)?
  // Only then does the engine hold its own error, which names no rank, for the plane's.
  auto env = std::make_shared<korovod::testing::FakeEnv>();
  auto [group, peer] = group_of_two(60, env);
  ASSERT_NE(group, nullptr);
  EXPECT_FALSE(peer->interrupt("the collective timeout (60 s) passed"));  // healthy, not waiting
  const Status s = korovod::testing::ends_at_bound(*env, milliseconds(60'000),
                                                   [&, &group = group] { return group->wait(1, Counter::kPosted, 1); });
  ASSERT_EQ(s.code(), StatusCode::kAborted) << s.to_string();
  EXPECT_TRUE(group->interrupt("the collective timeout (60 s) passed")) << "failed, not waiting: its error is due";
}

}  // namespace
}  // namespace korovod::shm
