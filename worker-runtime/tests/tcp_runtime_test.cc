// The whole engine without MPI: N runtimes as N threads of this process, meeting at the
// rendezvous store over loopback, negotiating over the TCP control plane and reducing over the
// TCP data plane. KOROVOD_HOST_ID makes ranks {0,1} one "host" and {2,3} another, so the
// topology (local / cross ranks) is checked as on two machines.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>

#include "korovod/tcp.h"
#include "test_ranks.h"
#include "transport/tcp/socket.h"

namespace korovod {
namespace {

int free_port() {
  Result<tcp::Fd> l = tcp::listen_on("127.0.0.1", 0, tcp::SocketOptions{}, 1);
  return l.is_ok() ? tcp::local_port(*l) : 0;
}

EnvMap env_for(int rank, int size, int port) {
  return {{"KOROVOD_RENDEZVOUS_ADDR", "localhost"}, {"KOROVOD_RENDEZVOUS_PORT", std::to_string(port)},
          {"HOROVOD_RANK", std::to_string(rank)},   {"KOROVOD_SIZE", std::to_string(size)},
          {"KOROVOD_HOST_ID", rank < 2 ? "host-a" : "host-b"}, {"KOROVOD_START_TIMEOUT", "10"}};
}

Config tcp_config() {
  Config c;
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
  EXPECT_EQ(w->host_id, "host-b");
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
  std::mutex mu;
  std::vector<std::string> failures;
  auto fail = [&](int rank, const std::string& what) {
    std::lock_guard<std::mutex> lock(mu);
    failures.push_back(fmt::format("rank {}: {}", rank, what));
  };
  testing::run_ranks(n, [&](int rank) {
    Result<TcpWorldConfig> world = parse_tcp_world(env_for(rank, n, port));
    Result<RuntimeOptions> options = world.is_ok() ? tcp_runtime_options(tcp_config(), *world)
                                                   : Result<RuntimeOptions>(world.status());
    if (!options.is_ok()) return fail(rank, options.status().to_string());
    Result<std::unique_ptr<Runtime>> rt = Runtime::create(std::move(options).value());
    if (!rt.is_ok()) return fail(rank, rt.status().to_string());
    Runtime& r = **rt;
    std::vector<std::string> cpu_planes = r.backend_names();  // NCCL first in an NCCL build (GPU tensors)
    if (!cpu_planes.empty() && cpu_planes.front() == "NCCL") cpu_planes.erase(cpu_planes.begin());
    if (r.transport_name() != "TCP" || cpu_planes != std::vector<std::string>{"TCP"}) {
      fail(rank, fmt::format("planes {} / {}", r.transport_name(), fmt::join(r.backend_names(), ",")));
    }
    if (r.local_rank() != rank % 2 || r.local_size() != 2 || r.cross_rank() != rank / 2 || r.cross_size() != 2) {
      fail(rank, fmt::format("topology local {}/{} cross {}/{}", r.local_rank(), r.local_size(), r.cross_rank(),
                             r.cross_size()));
    }
    // Sum of (rank + 1) * (i + 1) over ranks: 10 * (i + 1), exact in float32.
    std::vector<float> x(100003);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((rank + 1) * (i % 7 + 1));
    TensorView v{x.data(), DataType::kFloat32, {static_cast<int64_t>(x.size())}, kCpuDevice};
    Result<Handle> h = r.allreduce("grad", v, v, ReduceOp::kSum);
    Status s = h.is_ok() ? r.wait(*h) : h.status();
    if (!s.is_ok()) return fail(rank, "allreduce: " + s.to_string());
    for (size_t i = 0; i < x.size(); ++i) {
      if (x[i] != static_cast<float>(10 * (i % 7 + 1))) return fail(rank, fmt::format("allreduce[{}] = {}", i, x[i]));
    }
    std::vector<int32_t> b(5, rank == 2 ? 77 : rank);
    TensorView bv{b.data(), DataType::kInt32, {5}, kCpuDevice};
    h = r.broadcast("b", bv, 2);
    s = h.is_ok() ? r.wait(*h) : h.status();
    if (!s.is_ok() || b != std::vector<int32_t>(5, 77)) fail(rank, "broadcast: " + s.to_string());
    std::vector<int64_t> mine(static_cast<size_t>(rank + 1), rank);
    h = r.allgather("g", TensorView{mine.data(), DataType::kInt64, {rank + 1}, kCpuDevice});
    s = h.is_ok() ? r.wait(*h) : h.status();
    Result<OpOutput> out = s.is_ok() ? r.output(*h) : Result<OpOutput>(s);
    if (!out.is_ok() || out->shape != std::vector<int64_t>{10}) return fail(rank, "allgather: " + s.to_string());
    const auto* g = static_cast<const int64_t*>(out->data);
    for (int i = 0, k = 0; i < n; ++i) {
      for (int j = 0; j <= i; ++j, ++k) {
        if (g[k] != i) fail(rank, fmt::format("allgather[{}] = {}", k, g[k]));
      }
    }
    if (!r.shutdown().is_ok()) fail(rank, "shutdown");
  });
  EXPECT_TRUE(failures.empty()) << fmt::format("{}", fmt::join(failures, "\n"));
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

}  // namespace
}  // namespace korovod
