// The TCP transport's pieces without MPI: the rendezvous store's framing, the store server and
// client (set, get that waits, add, errors that name the rank and the key), and the Mesh's
// failure detection (a peer that closes, a peer that stalls); the interface / config choices.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "core/testing/bound_check.h"
#include "core/testing/fake_env.h"
#include "free_port.h"
#include "korovod/config.h"
#include "transport/tcp/address.h"
#include "transport/tcp/mesh.h"
#include "transport/tcp/store.h"

namespace korovod::tcp {
namespace {

TEST(StoreProtocol, RequestRoundTripsAndWaitsForWholeFrames) {
  const std::string frame = encode_request({StoreOp::kSet, "addr/3", std::string("10.0.0.1:5\0x", 12)});
  std::string buffer = frame.substr(0, frame.size() - 1);
  Result<std::optional<StoreRequest>> partial = take_request(buffer);
  ASSERT_TRUE(partial.is_ok());
  EXPECT_FALSE(partial->has_value());
  buffer = frame + encode_request({StoreOp::kGet, "k", ""});
  Result<std::optional<StoreRequest>> first = take_request(buffer);
  ASSERT_TRUE(first.is_ok() && first->has_value());
  EXPECT_EQ((*first)->op, StoreOp::kSet);
  EXPECT_EQ((*first)->key, "addr/3");
  EXPECT_EQ((*first)->value, std::string("10.0.0.1:5\0x", 12));
  Result<std::optional<StoreRequest>> second = take_request(buffer);
  ASSERT_TRUE(second.is_ok() && second->has_value());
  EXPECT_EQ((*second)->op, StoreOp::kGet);
  EXPECT_TRUE(buffer.empty());
}

TEST(StoreProtocol, RejectsUnknownOpsAndOversizedKeys) {
  std::string bad_op = encode_request({StoreOp::kGet, "k", ""});
  bad_op[0] = 9;
  EXPECT_FALSE(take_request(bad_op).is_ok());
  std::string big_key = encode_request({StoreOp::kGet, std::string(kMaxStoreKeyBytes + 1, 'k'), ""});
  EXPECT_FALSE(take_request(big_key).is_ok());
  std::string response = encode_response({false, "why"});
  Result<std::optional<StoreResponse>> r = take_response(response);
  ASSERT_TRUE(r.is_ok() && r->has_value());
  EXPECT_FALSE((*r)->ok);
  EXPECT_EQ((*r)->value, "why");
}

struct StoreFixture : ::testing::Test {
  void SetUp() override {
    Result<std::unique_ptr<StoreServer>> s = StoreServer::start("127.0.0.1", 0);
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    server = std::move(s).value();
    at = Endpoint{"127.0.0.1", server->port()};
  }
  std::unique_ptr<StoreClient> client(const std::string& who) {
    Result<std::unique_ptr<StoreClient>> c = StoreClient::connect(at, 5.0, who);
    EXPECT_TRUE(c.is_ok()) << c.status().to_string();
    return c.is_ok() ? std::move(c).value() : nullptr;
  }
  std::unique_ptr<StoreServer> server;
  Endpoint at;
};

TEST_F(StoreFixture, GetWaitsForALaterSetFromAnotherRank) {
  auto rank0 = client("rank 0"), rank1 = client("rank 1");
  ASSERT_TRUE(rank0 && rank1);
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_TRUE(rank1->set("addr/1", "10.0.0.2:7").is_ok());
  });
  const auto start = std::chrono::steady_clock::now();
  Result<std::string> got = rank0->get("addr/1", 5.0);
  late.join();
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_EQ(*got, "10.0.0.2:7");
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(90));
}

TEST_F(StoreFixture, AddCountsAcrossClients) {
  auto a = client("rank 0"), b = client("rank 1");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a->add("arrived", 1), 1);
  EXPECT_EQ(*b->add("arrived", 2), 3);
  EXPECT_EQ(*a->get("arrived", 1.0), "3");
  ASSERT_TRUE(a->set("text", "x").is_ok());
  Result<int64_t> not_number = b->add("text", 1);
  ASSERT_FALSE(not_number.is_ok());
  EXPECT_NE(not_number.status().message().find("not an integer"), std::string::npos);
}

TEST_F(StoreFixture, GetTimesOutNamingRankAndKey) {
  auto c = client("rank 3");
  ASSERT_TRUE(c);
  const auto start = std::chrono::steady_clock::now();
  Result<std::string> got = c->get("addr/7", 0.3);
  ASSERT_FALSE(got.is_ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  const std::string& m = got.status().message();
  EXPECT_NE(m.find("rank 3"), std::string::npos) << m;
  EXPECT_NE(m.find("addr/7"), std::string::npos) << m;
  EXPECT_EQ(got.status().code(), StatusCode::kAborted) << m;
}

TEST(StoreClientTest, UnreachableServerFailsInTimeNamingTheRank) {
  const int port = test_support::free_port();  // nobody listens there (not one of the ephemeral ports)
  const auto start = std::chrono::steady_clock::now();
  Result<std::unique_ptr<StoreClient>> c = StoreClient::connect({"127.0.0.1", port}, 0.3, "rank 2");
  ASSERT_FALSE(c.is_ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  EXPECT_NE(c.status().message().find("rank 2"), std::string::npos) << c.status().message();
}

// Two meshes of a two-rank set over a socketpair.
std::pair<std::unique_ptr<Mesh>, std::unique_ptr<Mesh>> mesh_pair(double timeout_seconds) {
  int sv[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  EXPECT_TRUE(set_nonblocking(sv[0]).is_ok() && set_nonblocking(sv[1]).is_ok());
  std::vector<os::Fd> a(2), b(2);
  a[1] = os::Fd(sv[0]);
  b[0] = os::Fd(sv[1]);
  return {std::make_unique<Mesh>(0, std::move(a), std::vector<int>{4, 9}, timeout_seconds),
          std::make_unique<Mesh>(1, std::move(b), std::vector<int>{4, 9}, timeout_seconds)};
}

TEST(MeshTest, ExchangeMovesBothDirections) {
  auto [a, b] = mesh_pair(5.0);
  std::vector<std::byte> from_a(300000, std::byte{1}), from_b(200000, std::byte{2});
  std::vector<std::byte> at_a(from_b.size()), at_b(from_a.size());
  std::vector<PeerIo> io_a(2), io_b(2);
  io_a[1] = {from_a.data(), static_cast<int64_t>(from_a.size()), 0, at_a.data(), static_cast<int64_t>(at_a.size()), 0};
  io_b[0] = {from_b.data(), static_cast<int64_t>(from_b.size()), 0, at_b.data(), static_cast<int64_t>(at_b.size()), 0};
  Status sb;
  std::thread tb([&, &b = b] { sb = b->exchange(io_b, "test"); });
  Status sa = a->exchange(io_a, "test");
  tb.join();
  ASSERT_TRUE(sa.is_ok() && sb.is_ok()) << sa.to_string() << sb.to_string();
  EXPECT_EQ(at_a, from_b);
  EXPECT_EQ(at_b, from_a);
}

TEST(MeshTest, PeerThatGoesAwayIsNamedAtOnce) {
  auto [a, b] = mesh_pair(30.0);
  std::vector<std::byte> buf(16);
  std::vector<PeerIo> io(2);
  io[1] = {nullptr, 0, 0, buf.data(), 16, 0};
  std::thread gone([&b = b] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    b.reset();  // closes without a failure notice, as a killed process does
  });
  const auto start = std::chrono::steady_clock::now();
  Status s = a->exchange(io, "allreduce");
  gone.join();
  ASSERT_FALSE(s.is_ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_NE(s.message().find("rank 9 closed the connection"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("(killed or exited): rank 9"), std::string::npos) << s.message();
  EXPECT_FALSE(a->failed().is_ok());  // and every later call fails the same way
}

TEST(MeshTest, StalledPeerTimesOutNamingIt) {
  auto [a, b] = mesh_pair(0.3);
  std::vector<std::byte> buf(16);
  std::vector<PeerIo> io(2);
  io[1] = {nullptr, 0, 0, buf.data(), 16, 0};
  const auto start = std::chrono::steady_clock::now();
  Status s = a->exchange(io, "broadcast");
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_GE(took, std::chrono::milliseconds(290));
  EXPECT_LT(took, std::chrono::seconds(3));
  EXPECT_NE(s.message().find("broadcast: no progress for 0.3 s waiting for rank 9"), std::string::npos) << s.message();
}

// The no-progress bound on the runtime's Env (Mesh's clock): 60 s of fake time end the wait,
// 59.9 s do not, and it takes about a second of real time (the polls sleep in slices of at most
// one second and look at the clock after each).
TEST(MeshTest, StalledPeerTimesOutAtTheBoundOnTheEnvsClock) {
  auto env = std::make_shared<korovod::testing::FakeEnv>();
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  ASSERT_TRUE(set_nonblocking(sv[0]).is_ok());
  std::vector<os::Fd> peers(2);
  peers[1] = os::Fd(sv[0]);
  os::Fd silent(sv[1]);  // rank 9's end: open, never written
  Mesh a(0, std::move(peers), std::vector<int>{4, 9}, 60.0, "TCP backend", {}, nullptr, env);
  std::vector<std::byte> buf(16);
  std::vector<PeerIo> io(2);
  io[1] = {nullptr, 0, 0, buf.data(), 16, 0};
  const Status s = korovod::testing::ends_at_bound(*env, std::chrono::milliseconds(60'000),
                                                   [&] { return a.exchange(io, "broadcast"); });
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_NE(s.message().find("broadcast: no progress for 60 s waiting for rank 9"), std::string::npos) << s.message();
}

// The meshes of an n-rank set over loopback TCP (urgent data, as between hosts), set rank r
// named "rank r on host hr".
std::vector<std::unique_ptr<Mesh>> tcp_meshes(int n, const std::vector<double>& timeouts,
                                              const std::vector<std::shared_ptr<MeshFamily>>& families = {}) {
  std::vector<std::vector<os::Fd>> fds(n);
  for (auto& row : fds) row.resize(n);
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      Result<os::Fd> listener = listen_on("127.0.0.1", 0, SocketOptions{});
      EXPECT_TRUE(listener.is_ok()) << listener.status().to_string();
      Result<os::Fd> out = connect_to({"127.0.0.1", local_port(*listener)}, SocketOptions{}, deadline_after(5));
      Result<os::Fd> in = accept_one(*listener, SocketOptions{}, deadline_after(5));
      EXPECT_TRUE(out.is_ok() && in.is_ok());
      EXPECT_TRUE(set_nonblocking(out->get()).is_ok() && set_nonblocking(in->get()).is_ok());
      fds[i][j] = std::move(out).value();
      fds[j][i] = std::move(in).value();
    }
  }
  std::vector<int> ranks;
  std::vector<std::string> names;
  for (int r = 0; r < n; ++r) ranks.push_back(r), names.push_back(fmt::format("rank {} on host h{}", r, r));
  std::vector<std::unique_ptr<Mesh>> meshes;
  for (int r = 0; r < n; ++r) {
    meshes.push_back(std::make_unique<Mesh>(r, std::move(fds[r]), ranks, timeouts[r], "TCP backend", names,
                                            families.empty() ? nullptr : families[r]));
  }
  return meshes;
}

// io that receives 16 bytes from set rank `from`.
std::vector<PeerIo> receive_from(int n, int from, std::vector<std::byte>& buf) {
  std::vector<PeerIo> io(n);
  io[from] = {nullptr, 0, 0, buf.data(), static_cast<int64_t>(buf.size()), 0};
  return io;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

TEST(MeshTest, InterruptEndsTheWaitNamingTheSilentPeer) {
  // The watchdog's hook: rank 1 is alive (its sockets open) but sends nothing; rank 0 has no
  // timeout of its own.
  auto meshes = tcp_meshes(2, {0.0, 0.0});
  std::vector<std::byte> buf(16);
  std::vector<PeerIo> io = receive_from(2, 1, buf);
  std::atomic<bool> was_waiting{false};
  std::thread watchdog([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    was_waiting = meshes[0]->interrupt("the collective timeout (3 s) passed");
  });
  const auto start = std::chrono::steady_clock::now();
  Status s = meshes[0]->exchange(io, "allreduce");
  const double took = seconds_since(start);
  watchdog.join();
  EXPECT_TRUE(was_waiting.load());
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_LT(took, 0.2 + Mesh::kSettleSeconds + 1.0);
  EXPECT_EQ(s.message().rfind("TCP backend on rank 0 on host h0: lost rank 1 on host h1 (", 0), 0u) << s.message();
  EXPECT_NE(s.message().find("allreduce: the collective timeout (3 s) passed waiting for rank 1 on host h1"),
            std::string::npos)
      << s.message();
  // Every later wait fails the same way, at once.
  EXPECT_EQ(meshes[0]->exchange(io, "allreduce").message(), s.message());
}

TEST(MeshTest, InterruptBetweenWaitsFailsTheNextOne) {
  auto meshes = tcp_meshes(2, {0.0, 0.0});
  EXPECT_FALSE(meshes[0]->interrupt("the collective timeout (3 s) passed"));  // nothing in progress
  std::vector<std::byte> buf(16);
  std::vector<PeerIo> io = receive_from(2, 1, buf);
  Status s = meshes[0]->exchange(io, "broadcast");
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("broadcast: the collective timeout (3 s) passed waiting for rank 1 on host h1"),
            std::string::npos)
      << s.message();
}

TEST(MeshTest, InterruptAfterTheMeshFailedSaysItsErrorIsComing) {
  // A rank stopped for a moment as its peers failed resumes with its wait's error on its way up
  // and its watchdog due at once: the watchdog must hold its own error, which names no rank.
  auto meshes = tcp_meshes(2, {0.3, 0.0});
  std::vector<std::byte> buf(16);
  std::vector<PeerIo> io = receive_from(2, 1, buf);
  Status s = meshes[0]->exchange(io, "allreduce");  // rank 1 is silent: rank 0's own bound
  ASSERT_EQ(s.code(), StatusCode::kAborted) << s.to_string();
  EXPECT_TRUE(meshes[0]->interrupt("the collective timeout (3 s) passed"));
  EXPECT_EQ(meshes[0]->exchange(io, "allreduce").message(), s.message());  // still its own error
}

#define EXPECT_SAYS(status, text) \
  EXPECT_NE((status).message().find(text), std::string::npos) << "wanted '" << (text) << "' in: " << (status).message()

// Rank 0's wait and rank 2's (on a thread, started together): what each gave, and how long
// rank 2's took.
struct TwoWaits {
  Status s0, s2;
  double took2 = 0;
};
template <typename Rank0, typename Rank2>
TwoWaits wait_on_ranks_0_and_2(Rank0 rank0, Rank2 rank2) {
  TwoWaits w;
  const auto start = std::chrono::steady_clock::now();
  std::thread survivor([&] {
    w.s2 = rank2();
    w.took2 = seconds_since(start);
  });
  w.s0 = rank0();
  survivor.join();
  return w;
}

// Both survivors of stopped rank 1 blame it: rank 0 lost it (and saw rank 2 fail too), rank 2
// learned it from rank 0's failure notice, which came during rank 2's `op`.
void expect_both_blame_rank_1(const TwoWaits& w, const std::string& op) {
  EXPECT_FALSE(w.s0.is_ok());
  EXPECT_FALSE(w.s2.is_ok());
  EXPECT_SAYS(w.s0, "lost rank 1 on host h1 (");
  EXPECT_SAYS(w.s0, "failed as well: rank 2 on host h2");
  EXPECT_SAYS(w.s2, "lost rank 1 on host h1 (");
  EXPECT_SAYS(w.s2, op + ": rank 0 on host h0 failed (its failure notice came)");
}

TEST(MeshTest, StoppedRankIsNamedBySurvivorsThatWaitedForOthers) {
  // A chain, as in a ring: rank 0 waits for rank 1, which is stopped (sockets open, silent);
  // rank 2 waits for rank 0 only, with no timeout of its own. Both must blame rank 1, not each
  // other.
  auto meshes = tcp_meshes(3, {0.5, 0.0, 0.0});
  std::vector<std::byte> buf0(16), buf2(16);
  std::vector<PeerIo> io0 = receive_from(3, 1, buf0), io2 = receive_from(3, 0, buf2);
  const TwoWaits w = wait_on_ranks_0_and_2([&] { return meshes[0]->exchange(io0, "allreduce"); },
                                           [&] { return meshes[2]->exchange(io2, "allreduce"); });
  expect_both_blame_rank_1(w, "allreduce");
  EXPECT_SAYS(w.s0, "no progress for 0.5 s waiting for rank 1 on host h1");
  EXPECT_EQ(w.s2.message().find("lost rank 0"), std::string::npos) << w.s2.message();
  EXPECT_SAYS(w.s2, "failed as well: rank 0 on host h0");
  EXPECT_LT(w.took2, 0.5 + 2 * Mesh::kSettleSeconds + 1.0);
}

TEST(MeshTest, SurvivorsWaitingForTheSameStoppedRankFailTogether) {
  // As in a negotiation round: ranks 0 and 2 both wait for rank 1 only (stopped). Rank 0's wait
  // runs out; rank 2, with no timeout of its own, fails on rank 0's notice, naming rank 1.
  auto meshes = tcp_meshes(3, {0.5, 0.0, 0.0});
  std::vector<std::byte> buf0(16), buf2(16);
  std::vector<PeerIo> io0 = receive_from(3, 1, buf0), io2 = receive_from(3, 1, buf2);
  const TwoWaits w = wait_on_ranks_0_and_2([&] { return meshes[0]->exchange(io0, "control bits"); },
                                           [&] { return meshes[2]->exchange(io2, "control bits"); });
  expect_both_blame_rank_1(w, "control bits");
  EXPECT_LT(w.took2, 0.5 + 2 * Mesh::kSettleSeconds + 1.0);
}

TEST(MeshTest, NoticeGoesOutOnEveryMeshOfTheFailingRank) {
  // Two meshes per rank (a data plane and a control plane, one family per rank). Rank 0 waits
  // for stopped rank 1 on the data mesh; rank 2 has moved on and waits for rank 1 on the control
  // mesh. Rank 0's failure reaches rank 2 through the control mesh, and rank 2's notice reaches
  // rank 0 through the data mesh: neither calls the other lost.
  std::vector<std::shared_ptr<MeshFamily>> families;
  for (int r = 0; r < 3; ++r) families.push_back(std::make_shared<MeshFamily>());
  auto data = tcp_meshes(3, {0.5, 0.0, 0.0}, families);
  auto control = tcp_meshes(3, {0.0, 0.0, 0.0}, families);
  std::vector<std::byte> buf0(16), buf2(16);
  std::vector<PeerIo> io0 = receive_from(3, 1, buf0), io2 = receive_from(3, 1, buf2);
  expect_both_blame_rank_1(wait_on_ranks_0_and_2([&] { return data[0]->exchange(io0, "allreduce"); },
                                                 [&] { return control[2]->exchange(io2, "control bits"); }),
                           "control bits");
}

TEST(MeshTest, PeerFailureWithoutATimeoutBlamesNoQuietPeer) {
  // Rank 0 fails for a reason of its own; rank 2, waiting for it, fails too; rank 1 is merely not
  // in this collective: nobody's wait ran out, so nobody calls it lost.
  auto meshes = tcp_meshes(3, {0.0, 0.0, 0.0});
  std::vector<std::byte> buf(16);
  std::vector<PeerIo> io = receive_from(3, 0, buf);
  Status s2;
  std::thread survivor([&] { s2 = meshes[2]->exchange(io, "allgather"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  Status s0 = meshes[0]->fail(Status::unknown("allgather: out of memory"));
  survivor.join();
  ASSERT_FALSE(s2.is_ok());
  EXPECT_EQ(s0.message().find("lost"), std::string::npos) << s0.message();
  EXPECT_EQ(s2.message().find("lost"), std::string::npos) << s2.message();
  EXPECT_NE(s2.message().find("failed as well: rank 0 on host h0"), std::string::npos) << s2.message();
}

}  // namespace
}  // namespace korovod::tcp

namespace korovod {
namespace {

TEST(TcpConfig, InterfaceComesFromKorovodThenGlooThenNcclNames) {
  Result<Config> c = parse_config({{"NCCL_SOCKET_IFNAME", "eth1,eth2"}, {"HOROVOD_CPU_OPERATIONS", "TCP"}});
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->tcp_iface, "eth1");
  EXPECT_EQ(c->cpu_operations, "tcp");
  c = parse_config({{"NCCL_SOCKET_IFNAME", "eth1"}, {"HOROVOD_GLOO_IFACE", "ens5"}});
  EXPECT_EQ(c->tcp_iface, "ens5");
  c = parse_config({{"KOROVOD_IFACE", "lo"}, {"HOROVOD_GLOO_IFACE", "ens5"}});
  EXPECT_EQ(c->tcp_iface, "lo");
  c = parse_config({{"NCCL_SOCKET_IFNAME", "^docker,lo"}});  // an exclusion names no interface
  EXPECT_EQ(c->tcp_iface, "");
  c = parse_config({{"KOROVOD_TCP_SEGMENT_BYTES", "4096"}, {"HOROVOD_HIERARCHICAL_ALLREDUCE", "1"},
                    {"KOROVOD_HOST_ID", "host-b"}});
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(c->tcp_segment_bytes, 4096);
  EXPECT_TRUE(c->hierarchical_allreduce);
  EXPECT_EQ(c->host_id, "host-b");
  EXPECT_FALSE(parse_config({{"KOROVOD_TCP_SEGMENT_BYTES", "8"}}).is_ok());
  EXPECT_FALSE(parse_config({{"KOROVOD_CPU_OPERATIONS", "gloo"}}).is_ok());
}

TEST(TcpAddress, InterfaceNameGivesItsAddressAndUnknownOnesAreNamed) {
  Result<std::string> lo = tcp::choose_listen_address("lo");
  ASSERT_TRUE(lo.is_ok()) << lo.status().to_string();
  EXPECT_EQ(*lo, "127.0.0.1");
  Result<std::string> none = tcp::choose_listen_address("no-such-if0");
  ASSERT_FALSE(none.is_ok());
  EXPECT_NE(none.status().message().find("no-such-if0"), std::string::npos);
  EXPECT_NE(none.status().message().find("lo"), std::string::npos);  // lists the ones there are
  Result<std::string> fallback = tcp::choose_listen_address("");
  ASSERT_TRUE(fallback.is_ok());
  EXPECT_TRUE(tcp::listen_on(*fallback, 0, tcp::SocketOptions{}).is_ok());  // a local address
  EXPECT_EQ(*tcp::resolve_ipv4("127.0.0.1"), "127.0.0.1");
}

}  // namespace
}  // namespace korovod
