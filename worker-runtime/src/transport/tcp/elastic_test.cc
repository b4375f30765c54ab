// Elastic init (docs/elastic.md, "Runtime"): this test plays the driver, writing the store keys
// as the contract says, and runs the workers as threads of this process (TCP data plane: shared
// memory segments are per process). Membership changes over rounds: 3 workers, then 2 after one
// is removed, then 3 again; every init joins the newest round, gets the driver's assignment,
// meets the others under the round's keys and marks itself ready.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>

#include "core/testing/test_ranks.h"
#include "korovod/c_api.h"
#include "korovod/tcp.h"
#include "transport/tcp/elastic.h"
#include "transport/tcp/socket.h"
#include "transport/tcp/store.h"

namespace korovod {
namespace {

using tcp::StoreClient;
using tcp::StoreServer;

Config tcp_config() {
  Config c;
  c.cpu_operations = "tcp";
  c.log_level = LogLevel::kError;
  c.collective_timeout_seconds = 20;
  return c;
}

// The driver's side of the store.
class Driver {
 public:
  Driver() {
    Result<std::unique_ptr<StoreServer>> s = StoreServer::start("127.0.0.1", 0);
    EXPECT_TRUE(s.is_ok()) << s.status().to_string();
    server_ = std::move(s).value();
    Result<std::unique_ptr<StoreClient>> c = StoreClient::connect({"127.0.0.1", server_->port()}, 5, "driver");
    EXPECT_TRUE(c.is_ok()) << c.status().to_string();
    client_ = std::move(c).value();
  }
  int port() const { return server_->port(); }
  StoreClient& store() { return *client_; }
  // Assignments first, then the round number, as the contract says.
  void publish(int round, const std::map<std::string, std::string>& assignments) {
    for (const auto& [id, text] : assignments) {
      ASSERT_TRUE(client_->set(fmt::format("elastic/{}/assign/{}", round, id), text).is_ok());
    }
    ASSERT_TRUE(client_->set("elastic/round", std::to_string(round)).is_ok());
  }
  bool ready(int round, const std::string& id) {
    Result<std::optional<std::string>> v = client_->try_get(fmt::format("elastic/{}/ready/{}", round, id));
    return v.is_ok() && v->has_value() && **v == "1";
  }

 private:
  std::unique_ptr<StoreServer> server_;
  std::unique_ptr<StoreClient> client_;
};

TcpWorldConfig worker(const std::string& id, int port, const std::string& host) {
  TcpWorldConfig w;
  w.rendezvous_addr = "127.0.0.1";
  w.rendezvous_port = port;
  w.server = RendezvousServer::kExternal;
  w.start_timeout_seconds = 10;
  w.elastic = true;
  w.elastic_worker_id = id;
  w.elastic_timeout_seconds = 10;
  w.host_id = host;
  w.hostname = host;
  return w;
}

TEST(ElasticAssignment, ParsesSixNumbersInRangeAndRejectsTheRest) {
  Result<WorldInfo> w = tcp::parse_elastic_assignment("2 4 0 2 1 2", "k");
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  EXPECT_EQ(w->rank, 2);
  EXPECT_EQ(w->size, 4);
  EXPECT_EQ(w->local_rank, 0);
  EXPECT_EQ(w->local_size, 2);
  EXPECT_EQ(w->cross_rank, 1);
  EXPECT_EQ(w->cross_size, 2);
  for (const char* bad : {"", "1 2 3", "4 4 0 1 0 1", "0 1 0 1 0 1 7", "0 2 x 1 0 1", "0 2 1 1 0 1", "0 2 0 1 2 2",
                          "-1 2 0 1 0 1"}) {
    Result<WorldInfo> r = tcp::parse_elastic_assignment(bad, "elastic/1/assign/h:0");
    ASSERT_FALSE(r.is_ok()) << bad;
    EXPECT_NE(r.status().message().find("elastic/1/assign/h:0"), std::string::npos) << r.status().message();
  }
}

TEST(ElasticWorld, EnvironmentNeedsAWorkerIdButNoRankOrSize) {
  EnvMap env = {{"KOROVOD_RENDEZVOUS_ADDR", "127.0.0.1"}, {"KOROVOD_RENDEZVOUS_PORT", "4242"},
                {"HOROVOD_ELASTIC", "1"}, {"KOROVOD_HOSTNAME", "node-7"}};
  EXPECT_TRUE(elastic_mode(env));
  Result<TcpWorldConfig> missing = parse_tcp_world(env);
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("KOROVOD_ELASTIC_WORKER_ID"), std::string::npos);
  env["KOROVOD_ELASTIC_WORKER_ID"] = "node-7:1";
  env["KOROVOD_ELASTIC_TIMEOUT"] = "12";
  Result<TcpWorldConfig> w = parse_tcp_world(env);
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  EXPECT_TRUE(w->elastic);
  EXPECT_EQ(w->elastic_worker_id, "node-7:1");
  EXPECT_DOUBLE_EQ(w->elastic_timeout_seconds, 12.0);
  EXPECT_EQ(w->hostname, "");  // KOROVOD_HOSTNAME is Config's (Config.HostNameForErrorsIsReadUnderBothNames)
  EXPECT_EQ(w->server, RendezvousServer::kExternal);  // the driver's store
  env["KOROVOD_ELASTIC"] = "0";
  env.erase("HOROVOD_ELASTIC");
  EXPECT_FALSE(elastic_mode(env));
  Result<ElasticHostsUpdate> not_elastic = read_elastic_hosts_version(env);
  ASSERT_FALSE(not_elastic.is_ok());
  EXPECT_EQ(not_elastic.status().code(), StatusCode::kPreconditionError);
}

TEST(ElasticRound, WaitsForANewerRoundJumpsToTheNewestAndRefusesRemovedWorkers) {
  Driver driver;
  Result<std::unique_ptr<StoreClient>> c = StoreClient::connect({"127.0.0.1", driver.port()}, 5, "worker");
  ASSERT_TRUE(c.is_ok());
  StoreClient& store = **c;
  // Nothing published yet: the wait runs out, naming the round it waited for.
  Result<tcp::ElasticRound> none = tcp::join_elastic_round(store, "a:0", 0.2);
  ASSERT_FALSE(none.is_ok());
  EXPECT_EQ(none.status().code(), StatusCode::kAborted);
  EXPECT_NE(none.status().message().find("newer than 0"), std::string::npos) << none.status().message();
  // A round published while the worker waits is taken.
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    driver.publish(1, {{"a:0", "0 1 0 1 0 1"}});
  });
  Result<tcp::ElasticRound> first = tcp::join_elastic_round(store, "a:0", 5);
  late.join();
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  EXPECT_EQ(first->round, 1);
  EXPECT_EQ(first->world.elastic_round, 1);
  // The next init of the same worker does not take round 1 again: it waits for a newer one.
  Result<tcp::ElasticRound> again = tcp::join_elastic_round(store, "a:0", 0.2);
  EXPECT_FALSE(again.is_ok());
  // Rounds 2 and 3 published meanwhile: the newest wins.
  driver.publish(2, {{"a:0", "0 2 0 2 0 1"}});
  driver.publish(3, {{"a:0", "1 3 1 3 0 1"}});
  Result<tcp::ElasticRound> newest = tcp::join_elastic_round(store, "a:0", 5);
  ASSERT_TRUE(newest.is_ok()) << newest.status().to_string();
  EXPECT_EQ(newest->round, 3);
  EXPECT_EQ(newest->world.rank, 1);
  EXPECT_EQ(newest->world.size, 3);
  // A round that does not name this worker yet (the driver started it before the round that
  // takes it in) is skipped; a later one that does is taken.
  driver.publish(4, {{"b:0", "0 1 0 1 0 1"}});
  std::thread later([&] { driver.publish(5, {{"b:0", "1 2 0 1 1 2"}, {"c:0", "0 2 0 1 0 2"}}); });
  Result<tcp::ElasticRound> c_round = tcp::join_elastic_round(store, "c:0", 5);
  later.join();
  ASSERT_TRUE(c_round.is_ok()) << c_round.status().to_string();
  EXPECT_EQ(c_round->round, 5);
  driver.publish(6, {{"a:0", "removed"}});
  Result<tcp::ElasticRound> removed = tcp::join_elastic_round(store, "a:0", 5);
  ASSERT_FALSE(removed.is_ok());
  EXPECT_EQ(removed.status().code(), StatusCode::kPreconditionError);
  EXPECT_NE(removed.status().message().find("removed"), std::string::npos);
  EXPECT_NE(removed.status().message().find("round 6"), std::string::npos);
}

TEST(ElasticRound, HostsVersionIsZeroUntilTheDriverSetsIt) {
  Driver driver;
  Result<tcp::HostsVersion> v = tcp::read_hosts_version(driver.store());
  ASSERT_TRUE(v.is_ok()) << v.status().to_string();
  EXPECT_EQ(v->version, 0u);
  EXPECT_EQ(v->kind, 0u);
  ASSERT_TRUE(driver.store().set("elastic/hosts_version", "7").is_ok());
  ASSERT_TRUE(driver.store().set("elastic/hosts_kind", "2").is_ok());
  TcpWorldConfig w = worker("a:0", driver.port(), "h");
  Result<tcp::HostsVersion> own = tcp::read_hosts_version_at(w);  // a connection of its own
  ASSERT_TRUE(own.is_ok()) << own.status().to_string();
  EXPECT_EQ(own->version, 7u);
  EXPECT_EQ(own->kind, 2u);
}

// One round: every member inits (in its own thread), checks the driver's assignment and an
// allreduce over the new membership, and shuts down.
void run_round(Driver& driver, int round, const std::vector<std::string>& ids,
               const std::map<std::string, WorldInfo>& want) {
  testing::run_ranks(static_cast<int>(ids.size()), [&](int i) {
    const std::string& id = ids[i];
    Result<std::unique_ptr<Runtime>> rt = start_tcp_runtime(tcp_config(), worker(id, driver.port(), "host-" + id));
    ASSERT_TRUE(rt.is_ok()) << id << ": " << rt.status().to_string();
    Runtime& r = **rt;
    const WorldInfo& w = want.at(id);
    EXPECT_EQ(r.elastic_round(), round) << id;
    EXPECT_EQ(r.rank(), w.rank) << id;
    EXPECT_EQ(r.size(), w.size) << id;
    EXPECT_EQ(r.local_rank(), w.local_rank) << id;
    EXPECT_EQ(r.local_size(), w.local_size) << id;
    EXPECT_EQ(r.cross_rank(), w.cross_rank) << id;
    EXPECT_EQ(r.cross_size(), w.cross_size) << id;
    EXPECT_TRUE(driver.ready(round, id)) << id;
    std::vector<float> x(1000, static_cast<float>(r.rank() + 1));
    TensorView t{x.data(), DataType::kFloat32, {1000}, kCpuDevice};
    Result<Handle> h = r.allreduce(fmt::format("round{}", round), t, t, ReduceOp::kSum);
    ASSERT_TRUE(h.is_ok());
    ASSERT_TRUE(r.wait(*h).is_ok());
    EXPECT_EQ(x[999], static_cast<float>(r.size() * (r.size() + 1) / 2)) << id;
    EXPECT_TRUE(r.shutdown().is_ok()) << id;
  });
}

std::string text(const WorldInfo& w) {
  return fmt::format("{} {} {} {} {} {}", w.rank, w.size, w.local_rank, w.local_size, w.cross_rank, w.cross_size);
}

TEST(ElasticRuntime, ResetsThroughRoundsOfChangingMembership) {
  Driver driver;
  // Round 1: three workers on two hosts; round 2: b:0 removed; round 3: b:0 back, ranks moved.
  const std::map<std::string, WorldInfo> r1 = {{"a:0", {0, 3, 0, 2, 0, 2}}, {"a:1", {1, 3, 1, 2, 0, 1}},
                                               {"b:0", {2, 3, 0, 1, 1, 2}}};
  const std::map<std::string, WorldInfo> r2 = {{"a:0", {0, 2, 0, 2, 0, 1}}, {"a:1", {1, 2, 1, 2, 0, 1}}};
  const std::map<std::string, WorldInfo> r3 = {{"b:0", {0, 3, 0, 1, 0, 2}}, {"a:0", {1, 3, 0, 2, 1, 2}},
                                               {"a:1", {2, 3, 1, 2, 0, 1}}};
  std::map<std::string, std::string> p1, p2, p3;
  for (const auto& [id, w] : r1) p1[id] = text(w);
  for (const auto& [id, w] : r2) p2[id] = text(w);
  p2["b:0"] = "removed";
  for (const auto& [id, w] : r3) p3[id] = text(w);
  driver.publish(1, p1);
  run_round(driver, 1, {"a:0", "a:1", "b:0"}, r1);
  driver.publish(2, p2);
  run_round(driver, 2, {"a:0", "a:1"}, r2);
  // The removed worker's init says so instead of joining.
  Result<std::unique_ptr<Runtime>> removed = start_tcp_runtime(tcp_config(), worker("b:0", driver.port(), "host-b"));
  ASSERT_FALSE(removed.is_ok());
  EXPECT_EQ(removed.status().code(), StatusCode::kPreconditionError);
  driver.publish(3, p3);
  run_round(driver, 3, {"a:0", "a:1", "b:0"}, r3);
}

// A round whose peer never starts (its worker failed before its init) is given up as soon as the
// driver publishes the next one, not after the whole start timeout: the init fails (Aborted,
// saying why) and the next init joins the newer round.
TEST(ElasticRuntime, ARoundSupersededWhileAPeerNeverCameIsGivenUpAtOnce) {
  Driver driver;
  driver.publish(1, {{"a:0", "0 2 0 1 0 2"}, {"b:0", "1 2 0 1 1 2"}});
  std::thread next_round([&driver] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    driver.publish(2, {{"a:0", "0 1 0 1 0 1"}, {"b:0", "removed"}});
  });
  const auto start = std::chrono::steady_clock::now();
  Result<std::unique_ptr<Runtime>> first = start_tcp_runtime(tcp_config(), worker("a:0", driver.port(), "host-a"));
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  next_round.join();
  ASSERT_FALSE(first.is_ok());
  EXPECT_EQ(first.status().code(), StatusCode::kAborted);
  EXPECT_NE(first.status().message().find("the driver published round 2 while this worker waited at the rendezvous "
                                          "of round 1"),
            std::string::npos)
      << first.status().message();
  EXPECT_LT(waited, 5.0) << "the start timeout is 10 s";
  Result<std::unique_ptr<Runtime>> second = start_tcp_runtime(tcp_config(), worker("a:0", driver.port(), "host-a"));
  ASSERT_TRUE(second.is_ok()) << second.status().to_string();
  EXPECT_EQ((*second)->elastic_round(), 2);
  EXPECT_EQ((*second)->size(), 1);
  EXPECT_TRUE((*second)->shutdown().is_ok());
}

// The C ABI as Python calls it: the environment a driver gives a worker, korovod_init joining
// round after round in one process (a reset), the round and the driver's counters read back.
TEST(ElasticCApi, InitJoinsEachNewRoundAndReadsTheDriversCounters) {
  Driver driver;
  EXPECT_EQ(korovod_elastic_enabled(), 0);
  char error[512];
  uint64_t version = 9, round = 9;
  uint32_t kind = 9;
  EXPECT_EQ(korovod_elastic_hosts_version(&version, &kind, error, sizeof error), KOROVOD_ERR_PRECONDITION);
  setenv("KOROVOD_RENDEZVOUS_ADDR", "127.0.0.1", 1);
  setenv("KOROVOD_RENDEZVOUS_PORT", std::to_string(driver.port()).c_str(), 1);
  setenv("KOROVOD_ELASTIC", "1", 1);
  setenv("KOROVOD_ELASTIC_WORKER_ID", "solo:0", 1);
  setenv("KOROVOD_ELASTIC_TIMEOUT", "10", 1);
  setenv("KOROVOD_HOSTNAME", "solo", 1);
  setenv("KOROVOD_LOG_LEVEL", "error", 1);
  EXPECT_EQ(korovod_elastic_enabled(), 1);
  ASSERT_EQ(korovod_elastic_hosts_version(&version, &kind, error, sizeof error), KOROVOD_OK) << error;
  EXPECT_EQ(version, 0u);
  EXPECT_EQ(kind, 0u);
  ASSERT_EQ(korovod_elastic_published_round(&round, error, sizeof error), KOROVOD_OK) << error;
  EXPECT_EQ(round, 0u);
  for (int r = 1; r <= 3; ++r) {
    std::thread publish([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the init is waiting by now
      driver.publish(r, {{"solo:0", "0 1 0 1 0 1"}});
      ASSERT_TRUE(driver.store().set("elastic/hosts_version", std::to_string(r)).is_ok());
      ASSERT_TRUE(driver.store().set("elastic/hosts_kind", "1").is_ok());
    });
    korovod_runtime* rt = nullptr;
    const int rc = korovod_init(&rt, nullptr, nullptr, nullptr, 0, error, sizeof error);
    publish.join();
    ASSERT_EQ(rc, KOROVOD_OK) << error;
    EXPECT_EQ(korovod_elastic_round(rt), r);
    EXPECT_EQ(korovod_size(rt), 1);
    EXPECT_TRUE(driver.ready(r, "solo:0"));
    ASSERT_EQ(korovod_elastic_published_round(&round, error, sizeof error), KOROVOD_OK) << error;
    EXPECT_EQ(round, static_cast<uint64_t>(r));
    ASSERT_EQ(korovod_elastic_hosts_version(&version, &kind, error, sizeof error), KOROVOD_OK) << error;
    EXPECT_EQ(version, static_cast<uint64_t>(r));
    EXPECT_EQ(kind, 1u);
    EXPECT_EQ(korovod_shutdown(rt), KOROVOD_OK);
    EXPECT_EQ(korovod_elastic_round(rt), r);  // kept after shutdown
    korovod_destroy(rt);
  }
  EXPECT_EQ(korovod_elastic_round(nullptr), -1);
  for (const char* v : {"KOROVOD_RENDEZVOUS_ADDR", "KOROVOD_RENDEZVOUS_PORT", "KOROVOD_ELASTIC",
                        "KOROVOD_ELASTIC_WORKER_ID", "KOROVOD_ELASTIC_TIMEOUT", "KOROVOD_HOSTNAME", "KOROVOD_LOG_LEVEL"}) {
    unsetenv(v);
  }
}

}  // namespace
}  // namespace korovod
