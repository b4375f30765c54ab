// The whole engine without MPI: N runtimes as N threads of this process, meeting at the
// rendezvous store over loopback, negotiating over the TCP control plane and reducing over the
// TCP data plane. Config::host_id (KOROVOD_HOST_ID) makes ranks {0,1} one "host" and {2,3}
// another, so the topology (local / cross ranks) is checked as on two machines.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "core/testing/fake_env.h"
#include "core/testing/test_ranks.h"
#include "free_port.h"
#include "korovod/tcp.h"
#include "transport/tcp/auth.h"
#include "transport/tcp/socket.h"

namespace korovod {
namespace {

using test_support::free_port;

EnvMap env_for(int rank, int size, int port) {
  return {{"KOROVOD_RENDEZVOUS_ADDR", "localhost"}, {"KOROVOD_RENDEZVOUS_PORT", std::to_string(port)},
          {"HOROVOD_RANK", std::to_string(rank)},   {"KOROVOD_SIZE", std::to_string(size)},
          {"KOROVOD_START_TIMEOUT", "10"}};
}

// What went wrong on which rank, collected from the rank threads.
class RankFailures {
 public:
  void add(int rank, const std::string& what) {
    std::lock_guard<std::mutex> lock(mu_);
    lines_.push_back(fmt::format("rank {}: {}", rank, what));
  }
  bool empty() const {
    std::lock_guard<std::mutex> lock(mu_);
    return lines_.empty();
  }
  std::string all() const {
    std::lock_guard<std::mutex> lock(mu_);
    return fmt::format("{}", fmt::join(lines_, "\n"));
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> lines_;
};

// host_id: KOROVOD_HOST_ID as parse_config reads it ("" = the Env's host).
Config tcp_config(const std::string& host_id = "") {
  Config c;
  c.host_id = host_id;
  c.cpu_operations = "tcp";
  c.log_level = LogLevel::kError;
  c.collective_timeout_seconds = 20;
  return c;
}

TEST(TcpWorld, ParsesLauncherEnvironmentAndNamesWhatIsMissing) {
  Result<TcpWorldConfig> w = parse_tcp_world(env_for(3, 4, 4242));
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  EXPECT_EQ(w->rank, 3);
  EXPECT_EQ(w->size, 4);
  EXPECT_EQ(w->rendezvous_port, 4242);
  EXPECT_EQ(w->host_id, "");  // KOROVOD_HOST_ID is Config's (parse_config), read in one place
  EXPECT_DOUBLE_EQ(w->start_timeout_seconds, 10.0);
  EnvMap env = env_for(0, 4, 4242);
  env.erase("KOROVOD_SIZE");
  Result<TcpWorldConfig> missing = parse_tcp_world(env);
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("KOROVOD_SIZE"), std::string::npos);
  env = env_for(5, 4, 4242);
  EXPECT_FALSE(parse_tcp_world(env).is_ok());  // rank out of range
}

TEST(TcpRuntime, FourRanksOnTwoForcedHostsRunCollectives) {
  const int n = 4, port = free_port();
  RankFailures failures;
  testing::run_ranks(n, [&](int rank) {
    Result<TcpWorldConfig> world = parse_tcp_world(env_for(rank, n, port));
    Result<RuntimeOptions> options = world.is_ok() ? tcp_runtime_options(tcp_config(rank < 2 ? "host-a" : "host-b"), *world)
                                                   : Result<RuntimeOptions>(world.status());
    if (!options.is_ok()) return failures.add(rank, options.status().to_string());
    Result<std::unique_ptr<Runtime>> rt = Runtime::create(std::move(options).value());
    if (!rt.is_ok()) return failures.add(rank, rt.status().to_string());
    Runtime& r = **rt;
    std::vector<std::string> cpu_planes = r.backend_names();  // NCCL first in an NCCL build (GPU tensors)
    if (!cpu_planes.empty() && cpu_planes.front() == "NCCL") cpu_planes.erase(cpu_planes.begin());
    if (r.transport_name() != "TCP" || cpu_planes != std::vector<std::string>{"TCP"}) {
      failures.add(rank, fmt::format("planes {} / {}", r.transport_name(), fmt::join(r.backend_names(), ",")));
    }
    if (r.local_rank() != rank % 2 || r.local_size() != 2 || r.cross_rank() != rank / 2 || r.cross_size() != 2) {
      failures.add(rank, fmt::format("topology local {}/{} cross {}/{}", r.local_rank(), r.local_size(),
                                     r.cross_rank(), r.cross_size()));
    }
    // Sum of (rank + 1) * (i + 1) over ranks: 10 * (i + 1), exact in float32.
    std::vector<float> x(100003);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((rank + 1) * (i % 7 + 1));
    TensorView v{x.data(), DataType::kFloat32, {static_cast<int64_t>(x.size())}, kCpuDevice};
    Result<Handle> h = r.allreduce("grad", v, v, ReduceOp::kSum);
    Status s = h.is_ok() ? r.wait(*h) : h.status();
    if (!s.is_ok()) return failures.add(rank, "allreduce: " + s.to_string());
    for (size_t i = 0; i < x.size(); ++i) {
      if (x[i] != static_cast<float>(10 * (i % 7 + 1))) {
        return failures.add(rank, fmt::format("allreduce[{}] = {}", i, x[i]));
      }
    }
    std::vector<int32_t> b(5, rank == 2 ? 77 : rank);
    TensorView bv{b.data(), DataType::kInt32, {5}, kCpuDevice};
    h = r.broadcast("b", bv, 2);
    s = h.is_ok() ? r.wait(*h) : h.status();
    if (!s.is_ok() || b != std::vector<int32_t>(5, 77)) failures.add(rank, "broadcast: " + s.to_string());
    std::vector<int64_t> mine(static_cast<size_t>(rank + 1), rank);
    h = r.allgather("g", TensorView{mine.data(), DataType::kInt64, {rank + 1}, kCpuDevice});
    s = h.is_ok() ? r.wait(*h) : h.status();
    Result<OpOutput> out = s.is_ok() ? r.output(*h) : Result<OpOutput>(s);
    if (!out.is_ok() || out->shape != std::vector<int64_t>{10}) {
      return failures.add(rank, "allgather: " + s.to_string());
    }
    const auto* g = static_cast<const int64_t*>(out->data);
    for (int i = 0, k = 0; i < n; ++i) {
      for (int j = 0; j <= i; ++j, ++k) {
        if (g[k] != i) failures.add(rank, fmt::format("allgather[{}] = {}", k, g[k]));
      }
    }
    if (!r.shutdown().is_ok()) failures.add(rank, "shutdown");
  });
  EXPECT_TRUE(failures.empty()) << failures.all();
}

// With no host_id each rank's Env names its machine (Env::host): four threads of this
// process pose as two hosts, told apart by hostname, or by boot id alone (containers with one
// name on two machines). The Env reaches the runtime (RuntimeOptions::env) and the topology,
// and errors name the hosts the Envs gave.
TEST(TcpRuntime, TheEnvsHostGroupsRanksIntoHostsAndNamesThem) {
  struct Layout {
    const char* label;
    HostIdentity first, second;  // ranks 0,1 and ranks 2,3
  };
  const Layout layouts[] = {{"two hostnames", {"node-a", "boot-1"}, {"node-b", "boot-1"}},
                            {"one hostname, two boot ids", {"node", "boot-1"}, {"node", "boot-2"}}};
  for (const Layout& layout : layouts) {
    SCOPED_TRACE(layout.label);
    const int n = 4, port = free_port();
    RankFailures failures;
    testing::run_ranks(n, [&](int rank) {
      EnvMap launcher = env_for(rank, n, port);
      auto env = std::make_shared<testing::NamedHostEnv>(rank < 2 ? layout.first : layout.second);
      Result<TcpWorldConfig> world = parse_tcp_world(launcher);
      Result<RuntimeOptions> options = world.is_ok() ? tcp_runtime_options(tcp_config(), *world, {}, env)
                                                     : Result<RuntimeOptions>(world.status());
      if (!options.is_ok()) return failures.add(rank, options.status().to_string());
      const std::shared_ptr<TransportProvider> transport = options->transport;
      Result<std::unique_ptr<Runtime>> rt = Runtime::create(std::move(options).value());
      if (!rt.is_ok()) return failures.add(rank, rt.status().to_string());
      Runtime& r = **rt;
      if (&r.env() != env.get()) failures.add(rank, "the runtime does not run on the Env the start path was given");
      if (r.local_rank() != rank % 2 || r.local_size() != 2 || r.cross_rank() != rank / 2 || r.cross_size() != 2) {
        failures.add(rank, fmt::format("topology local {}/{} cross {}/{}", r.local_rank(), r.local_size(),
                                       r.cross_rank(), r.cross_size()));
      }
      for (int peer = 0; peer < n; ++peer) {
        const std::string& host = (peer < 2 ? layout.first : layout.second).hostname;
        const std::string name = transport->rank_name(peer);
        if (name.find(host) == std::string::npos) failures.add(rank, fmt::format("rank {} is called {:?}", peer, name));
      }
      std::vector<int32_t> x(7, rank + 1);
      TensorView v{x.data(), DataType::kInt32, {7}, kCpuDevice};
      Result<Handle> h = r.allreduce("x", v, v, ReduceOp::kSum);
      Status s = h.is_ok() ? r.wait(*h) : h.status();
      if (!s.is_ok() || x != std::vector<int32_t>(7, 10)) failures.add(rank, "allreduce: " + s.to_string());
      if (!r.shutdown().is_ok()) failures.add(rank, "shutdown");
    });
    EXPECT_TRUE(failures.empty()) << failures.all();
  }
}

// Connections to the store's port that never prove the secret, one after another, until `stop`:
// garbage, a store request without a handshake, a wrong proof, and silence.
void attack_store(int port, const std::atomic<bool>& stop, std::atomic<int>& attempts) {
  const tcp::Endpoint at{"127.0.0.1", port};
  const tcp::JobSecret wrong = *tcp::JobSecret::from_text("not-the-job-secret-at-all", "test");
  std::vector<os::Fd> silent;
  for (int i = 0; !stop; ++i) {
    Result<os::Fd> fd = tcp::connect_to(at, tcp::SocketOptions{0}, tcp::deadline_after(0.2));
    if (!fd.is_ok()) continue;  // rank 0 has not started the store yet
    ++attempts;
    switch (i % 4) {
      case 0:
        (void)tcp::send_all(fd->get(), "GET / HTTP/1.0\r\n\r\n", 18, tcp::deadline_after(0.2), "store");
        break;
      case 1:
        (void)tcp::send_all(fd->get(), "\x02\x01\x00\x00\x00k", 6, tcp::deadline_after(0.2), "store");
        break;
      case 2:
        (void)tcp::authenticate_to_server(fd->get(), wrong, "store", "", tcp::deadline_after(0.5), "store");
        break;
      default:
        if (silent.size() < 8) silent.push_back(std::move(fd).value());
    }
  }
}

TEST(TcpRuntime, RanksWithTheJobSecretComputeWhileTheStoreIsAttacked) {
  const int n = 3, port = free_port();
  std::atomic<bool> stop{false};
  std::atomic<int> attempts{0};
  std::thread intruder([&] { attack_store(port, stop, attempts); });
  RankFailures failures;
  testing::run_ranks(n, [&](int rank) {
    EnvMap env = env_for(rank, n, port);
    env["KOROVOD_JOB_SECRET"] = "the-secret-every-rank-of-this-job-has";
    Result<TcpWorldConfig> world = parse_tcp_world(env);
    Result<RuntimeOptions> options = world.is_ok() ? tcp_runtime_options(tcp_config(rank < 2 ? "host-a" : "host-b"), *world)
                                                   : Result<RuntimeOptions>(world.status());
    Result<std::unique_ptr<Runtime>> rt =
        options.is_ok() ? Runtime::create(std::move(options).value()) : Result<std::unique_ptr<Runtime>>(options.status());
    std::string failure;
    if (rt.is_ok()) {
      std::vector<float> x(4099, static_cast<float>(rank + 1));
      TensorView v{x.data(), DataType::kFloat32, {static_cast<int64_t>(x.size())}, kCpuDevice};
      Result<Handle> h = (*rt)->allreduce("x", v, v, ReduceOp::kSum);
      Status s = h.is_ok() ? (*rt)->wait(*h) : h.status();
      if (!s.is_ok()) failure = s.to_string();
      for (float f : x) {
        if (failure.empty() && f != 6.0f) failure = fmt::format("allreduce gave {} instead of 6", f);
      }
      if (!(*rt)->shutdown().is_ok()) failure += " shutdown failed";
    } else {
      failure = rt.status().to_string();
    }
    if (!failure.empty()) failures.add(rank, failure);
  });
  stop = true;
  intruder.join();
  EXPECT_TRUE(failures.empty()) << failures.all();
  EXPECT_GT(attempts.load(), 4) << "the intruder never got at the store";
}

TEST(TcpRuntime, RankWithAnotherSecretCannotJoin) {
  const int port = free_port();
  std::vector<Status> status(2);
  testing::run_ranks(2, [&](int rank) {
    EnvMap env = env_for(rank, 2, port);
    env["KOROVOD_START_TIMEOUT"] = "2";
    env["KOROVOD_JOB_SECRET"] = rank == 0 ? "the-secret-of-the-job-rank-0-has" : "a-secret-from-some-other-job";
    Result<TcpWorldConfig> world = parse_tcp_world(env);
    status[rank] = world.is_ok() ? tcp_runtime_options(tcp_config(), *world).status() : world.status();
  });
  ASSERT_FALSE(status[1].is_ok());
  EXPECT_NE(status[1].message().find("refused this side's proof"), std::string::npos) << status[1].message();
  ASSERT_FALSE(status[0].is_ok());
  EXPECT_NE(status[0].message().find("rank 1 did not arrive"), std::string::npos) << status[0].message();
}

TEST(TcpRuntime, MissingRankFailsTheStartNamingIt) {
  TcpWorldConfig world;
  world.rendezvous_addr = "127.0.0.1";
  world.rendezvous_port = free_port();
  world.rank = 0;
  world.size = 2;  // rank 1 never comes
  world.start_timeout_seconds = 0.5;
  const auto start = std::chrono::steady_clock::now();
  Result<RuntimeOptions> options = tcp_runtime_options(tcp_config(), world);
  ASSERT_FALSE(options.is_ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_NE(options.status().message().find("rank 1 did not arrive"), std::string::npos)
      << options.status().message();
}

TEST(TcpRuntime, EveryRankThatNeverCameIsNamed) {
  TcpWorldConfig world;
  world.rendezvous_addr = "127.0.0.1";
  world.rendezvous_port = free_port();
  world.rank = 0;
  world.size = 4;  // ranks 1 and 3 never come; rank 2 does
  world.start_timeout_seconds = 3;
  std::thread rank2([world]() mutable {
    world.rank = 2;
    (void)tcp_runtime_options(tcp_config(), world);  // fails too once rank 0 gave up
  });
  Result<RuntimeOptions> options = tcp_runtime_options(tcp_config(), world);
  rank2.join();
  ASSERT_FALSE(options.is_ok());
  EXPECT_NE(options.status().message().find("ranks 1, 3 did not arrive at the rendezvous store"), std::string::npos)
      << options.status().message();
}

TEST(TcpRuntime, OperationAfterAnotherRanksShutdownFailsInsteadOfHanging) {
  // Rank 1 shuts down (as an elastic reset after its own failure does) while rank 0 is idle: the
  // agreed shutdown ends rank 0's engine too. Rank 0's next operation must fail at once
  // (HorovodInternalError in Python, which resets), not wait forever for an engine that is gone.
  for (const std::string plane : {"tcp"}) {  // (one process: no shared memory between its ranks)
    const int port = free_port();
    std::atomic<int> phase{0};
    Status after;
    double took = -1;
    testing::run_ranks(2, [&](int rank) {
      Config config = tcp_config();
      config.cpu_operations = plane;
      Result<TcpWorldConfig> world = parse_tcp_world(env_for(rank, 2, port));
      Result<RuntimeOptions> options = world.is_ok() ? tcp_runtime_options(config, *world)
                                                     : Result<RuntimeOptions>(world.status());
      Result<std::unique_ptr<Runtime>> rt =
          options.is_ok() ? Runtime::create(std::move(options).value()) : Result<std::unique_ptr<Runtime>>(options.status());
      phase.fetch_add(1);
      if (!rt.is_ok()) return;
      Runtime& r = **rt;
      while (phase.load() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      if (rank == 1) {
        (void)r.shutdown();
        phase = 10;
        return;
      }
      while (phase.load() < 10) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      std::vector<float> x(4, 1.f);
      TensorView t{x.data(), DataType::kFloat32, {4}, kCpuDevice};
      const auto start = std::chrono::steady_clock::now();
      Result<Handle> h = r.allreduce("after.peer.shutdown", t, t, ReduceOp::kSum);
      after = h.is_ok() ? r.wait_for(*h, 5.0) : h.status();
      took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (h.is_ok()) r.release(*h);
      (void)r.shutdown();
    });
    EXPECT_EQ(phase.load(), 10) << plane << ": a rank did not start";
    EXPECT_FALSE(after.is_ok()) << plane;
    EXPECT_EQ(after.code(), StatusCode::kAborted) << plane << ": " << after.to_string();
    EXPECT_NE(after.message().find("shut down"), std::string::npos) << plane << ": " << after.message();
    EXPECT_LT(took, 2.0) << plane << ": " << after.to_string();
  }
}

}  // namespace
}  // namespace korovod
