// The TCP transport's setup bounds run on the runtime's Env, as its collectives' do: the start
// timeout (a rank that never arrives at the rendezvous store), connecting to the store, a mesh
// waiting for its higher ranks, the job-secret handshake of the store's listener and the elastic
// join. Each gives up at its bound of a FakeEnv's time, which the test moves, within seconds of
// real time (core/testing/bound_check.h); on the system's clock each would wait its whole bound.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/testing/bound_check.h"
#include "core/testing/fake_env.h"
#include "korovod/tcp.h"
#include "transport/tcp/elastic.h"
#include "transport/tcp/mesh_setup.h"
#include "transport/tcp/store.h"
#include "transport/tcp/tcp_transport.h"

namespace korovod::tcp {
namespace {

using korovod::testing::ends_at_bound;
using korovod::testing::FakeEnv;
using std::chrono::milliseconds;

bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// A loopback port nobody listens on: connections to it are refused.
int refused_port() {
  Result<os::Fd> listener = listen_on("127.0.0.1", 0, SocketOptions{0});
  EXPECT_TRUE(listener.is_ok()) << listener.status().to_string();
  return listener.is_ok() ? local_port(*listener) : 1;
}

TEST(SetupOnTheEnvsClock, StartGivesUpAtTheStartTimeoutWhenARankNeverArrives) {
  auto env = std::make_shared<FakeEnv>();
  TcpWorldConfig world;
  world.rendezvous_addr = "127.0.0.1";
  world.server_listen_host = "127.0.0.1";
  world.rank = 0;
  world.size = 2;  // rank 1 never starts
  world.start_timeout_seconds = 60;
  world.job_secret = JobSecret::generate().text();
  const Status s = ends_at_bound(*env, milliseconds(60'000), [&] {
    return TcpTransportProvider::create(world, "lo", env->host(), {}, env).status();
  });
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s.to_string();
  EXPECT_TRUE(contains(s.message(), "rank 1 did not arrive at the rendezvous store")) << s.message();
}

TEST(SetupOnTheEnvsClock, ConnectingToTheStoreGivesUpAtItsBound) {
  auto env = std::make_shared<FakeEnv>();
  const int port = refused_port();
  const Status s = ends_at_bound(*env, milliseconds(45'000), [&] {
    return StoreClient::connect({"127.0.0.1", port}, 45, "rank 3", {}, env).status();
  });
  EXPECT_TRUE(contains(s.message(), "rank 3: cannot reach the rendezvous store within 45 s")) << s.message();
}

TEST(SetupOnTheEnvsClock, AMeshGivesUpWaitingForAHigherRankAtItsBound) {
  auto env = std::make_shared<FakeEnv>();
  Result<os::Fd> listener = listen_on("127.0.0.1", 0, SocketOptions{0});
  ASSERT_TRUE(listener.is_ok());
  const std::vector<std::string> endpoints = {"127.0.0.1:" + std::to_string(local_port(*listener)),
                                              "127.0.0.1:" + std::to_string(refused_port())};
  MeshAuth auth;
  auth.clock = env;
  const Status s = ends_at_bound(*env, milliseconds(30'000), [&] {
    // Set rank 0 of {10, 11}: it accepts rank 11, which never connects.
    return connect_mesh(*listener, endpoints, 0, 0, SocketOptions{0}, 30.0, {10, 11}, auth).status();
  });
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s.to_string();
  EXPECT_TRUE(contains(s.message(), "timed out waiting for rank 11 to connect")) << s.message();
}

TEST(SetupOnTheEnvsClock, TheStoreClosesASilentConnectionAtTheHandshakeBound) {
  auto env = std::make_shared<FakeEnv>();
  std::mutex mu;
  std::vector<std::string> log;
  AuthLog sink = [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(mu);
    log.push_back(line);
  };
  Result<std::unique_ptr<StoreServer>> server =
      StoreServer::start("127.0.0.1", 0, JobSecret::generate(), sink, 20.0, env);
  ASSERT_TRUE(server.is_ok()) << server.status().to_string();
  const std::string closed = "no complete job-secret handshake within 20 s";
  auto logged = [&] {
    std::lock_guard<std::mutex> lock(mu);
    for (const std::string& line : log)
      if (contains(line, closed)) return true;
    return false;
  };
  os::Fd silent;
  const Status s = ends_at_bound(*env, milliseconds(20'000), [&] {
    Result<os::Fd> fd = connect_to({"127.0.0.1", (*server)->port()}, SocketOptions{0}, deadline_after(5));
    if (!fd.is_ok()) return fd.status();
    silent = std::move(fd).value();  // says nothing, and stays open
    // The server's verdict comes on its own thread; this waits for it, in real time.
    for (int i = 0; i < 30'000 && !logged(); ++i) std::this_thread::sleep_for(milliseconds(1));
    return logged() ? Status::ok() : Status::aborted("the store never closed the silent connection");
  });
  EXPECT_TRUE(s.is_ok()) << s.to_string();
}

TEST(SetupOnTheEnvsClock, AnElasticJoinGivesUpAtItsBoundOnTheStoresClock) {
  auto env = std::make_shared<FakeEnv>();
  Result<std::unique_ptr<StoreServer>> server = StoreServer::start("127.0.0.1", 0);
  ASSERT_TRUE(server.is_ok()) << server.status().to_string();
  Result<std::unique_ptr<StoreClient>> store =
      StoreClient::connect({"127.0.0.1", (*server)->port()}, 5, "elastic worker h:0", {}, env);
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  const Status s = ends_at_bound(*env, milliseconds(90'000), [&] {
    return join_elastic_round(**store, "h:0", 90).status();  // no driver publishes a round
  });
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s.to_string();
  EXPECT_TRUE(contains(s.message(), "elastic: worker h:0 waited 90 s")) << s.message();
}

}  // namespace
}  // namespace korovod::tcp
