// Intruders against a job's TCP listeners: processes without the job secret, with a wrong one,
// replaying a real client's recorded handshake, sending garbage, or connecting and saying nothing.
// Each is closed and logged with its address, and the job goes on as if it were not there: the
// rendezvous store keeps serving its ranks, a mesh's accept keeps taking its real peers, and a
// whole runtime started with a secret computes correct results while the store is under attack.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

#include "core/testing/test_ranks.h"
#include "korovod/tcp.h"
#include "transport/tcp/mesh.h"
#include "transport/tcp/mesh_setup.h"
#include "transport/tcp/store.h"
#include "transport/tcp/tcp_transport.h"

namespace korovod::tcp {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

const std::string kSecretText = "0f1e2d3c4b5a69788796a5b4c3d2e1f0";

JobSecret job_secret(const std::string& text = kSecretText) { return *JobSecret::from_text(text, "the test"); }

// What the listeners logged, for the assertions.
struct LogLines {
  std::mutex mu;
  std::vector<std::string> lines;
  AuthLog sink() {
    return [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(mu);
      lines.push_back(line);
    };
  }
  size_t count(const std::string& what) {
    std::lock_guard<std::mutex> lock(mu);
    size_t n = 0;
    for (const std::string& l : lines) n += l.find(what) != std::string::npos;
    return n;
  }
  std::string all() {
    std::lock_guard<std::mutex> lock(mu);
    return fmt::format("{}", fmt::join(lines, "\n"));
  }
};

os::Fd dial(const Endpoint& at) {
  Result<os::Fd> fd = connect_to(at, SocketOptions{0}, deadline_after(5));
  EXPECT_TRUE(fd.is_ok()) << fd.status().to_string();
  return fd.is_ok() ? std::move(fd).value() : os::Fd();
}

// Seconds until the server closes `fd` (reads and drops whatever it sends first); -1 if it is
// still open after `limit`.
double seconds_until_closed(int fd, double limit) {
  const auto start = Clock::now();
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    const double left = limit - std::chrono::duration<double>(Clock::now() - start).count();
    if (left <= 0 || poll(&p, 1, static_cast<int>(left * 1000) + 1) <= 0) return -1;
    char buf[256];
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return std::chrono::duration<double>(Clock::now() - start).count();
  }
}

// A real client's handshake recorded on the way (a man in the middle that only listens): the
// client -> server bytes of one successful connection through a relay.
std::string record_real_store_handshake(const Endpoint& store, const JobSecret& secret) {
  Result<os::Fd> listener = listen_on("127.0.0.1", 0, SocketOptions{0}, 4);
  EXPECT_TRUE(listener.is_ok());
  const Endpoint relay{"127.0.0.1", local_port(*listener)};
  std::string recorded;
  std::thread relay_thread([&] {
    Result<os::Fd> from = accept_one(*listener, SocketOptions{0}, deadline_after(5));
    os::Fd to = dial(store);
    if (!from.is_ok() || !to.valid()) return;
    for (;;) {
      pollfd p[2] = {{from->get(), POLLIN, 0}, {to.get(), POLLIN, 0}};
      if (poll(p, 2, 5000) <= 0) return;
      char buf[4096];
      for (int i = 0; i < 2; ++i) {
        if (!p[i].revents) continue;
        const ssize_t n = recv(p[i].fd, buf, sizeof buf, 0);
        if (n <= 0) return;
        if (i == 0) recorded.append(buf, static_cast<size_t>(n));
        (void)!send(p[1 - i].fd, buf, static_cast<size_t>(n), MSG_NOSIGNAL);
      }
    }
  });
  {
    Result<std::unique_ptr<StoreClient>> c = StoreClient::connect(relay, 5, "the recorded rank", secret);
    EXPECT_TRUE(c.is_ok()) << c.status().to_string();
    if (c.is_ok()) {
      EXPECT_TRUE((*c)->set("recorded", "yes").is_ok());
    }
  }  // the client closes: the relay ends
  relay_thread.join();
  return recorded.substr(0, kMagicBytes + kNonceBytes + kMacBytes);
}

TEST(StoreUnderAttack, IntrudersAreClosedAndLoggedWhileRanksAreServed) {
  LogLines log;
  Result<std::unique_ptr<StoreServer>> server = StoreServer::start("127.0.0.1", 0, job_secret(), log.sink(), 1.0);
  ASSERT_TRUE(server.is_ok()) << server.status().to_string();
  const Endpoint at{"127.0.0.1", (*server)->port()};
  const std::string recorded = record_real_store_handshake(at, job_secret());
  ASSERT_EQ(recorded.size(), kMagicBytes + kNonceBytes + kMacBytes);

  os::Fd silent = dial(at);                      // connects and says nothing
  os::Fd half = dial(at);                        // the start of a proof, then nothing
  ASSERT_TRUE(send_all(half.get(), "KRVC", 4, deadline_after(1), "store").is_ok());
  os::Fd garbage = dial(at);
  ASSERT_TRUE(send_all(garbage.get(), "GET / HTTP/1.0\r\n\r\n", 18, deadline_after(1), "store").is_ok());
  os::Fd replay = dial(at);
  char hello[kHelloBytes];
  ASSERT_TRUE(recv_all(replay.get(), hello, sizeof hello, deadline_after(2), "store").is_ok());
  ASSERT_TRUE(send_all(replay.get(), recorded.data(), recorded.size(), deadline_after(1), "store").is_ok());
  Result<std::unique_ptr<StoreClient>> wrong =
      StoreClient::connect(at, 2, "an intruder", job_secret("not-the-secret-but-long-enough"));
  ASSERT_FALSE(wrong.is_ok());
  EXPECT_NE(wrong.status().message().find("refused this side's proof"), std::string::npos) << wrong.status().message();
  Result<std::unique_ptr<StoreClient>> none = StoreClient::connect(at, 2, "a rank without the secret", JobSecret());
  ASSERT_TRUE(none.is_ok()) << "no handshake: its first request is what fails";
  Result<std::string> stolen = (*none)->get("recorded", 2);
  ASSERT_FALSE(stolen.is_ok()) << "read " << *stolen << " without the secret";

  // The ranks meanwhile: served at once, whatever the intruders hold open.
  const auto start = Clock::now();
  Result<std::unique_ptr<StoreClient>> a = StoreClient::connect(at, 5, "rank 0", job_secret());
  Result<std::unique_ptr<StoreClient>> b = StoreClient::connect(at, 5, "rank 1", job_secret());
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  ASSERT_TRUE((*a)->set("addr/0", "10.0.0.1:7").is_ok());
  EXPECT_EQ(*(*b)->get("addr/0", 5), "10.0.0.1:7");
  EXPECT_EQ(*(*b)->get("recorded", 5), "yes");
  EXPECT_EQ(*(*a)->add("arrived", 2), 2);
  EXPECT_LT(Clock::now() - start, 500ms) << "a silent intruder held the ranks up";

  for (os::Fd* fd : {&garbage, &replay}) EXPECT_GE(seconds_until_closed(fd->get(), 2), 0) << "not closed";
  const double silent_closed = seconds_until_closed(silent.get(), 3);
  EXPECT_GE(silent_closed, 0) << "the silent connection was never closed";
  EXPECT_GE(seconds_until_closed(half.get(), 3), 0) << "the half handshake was never closed";

  EXPECT_GE(log.count("something other than a job-secret handshake"), 2u) << log.all();  // garbage, no secret
  EXPECT_GE(log.count("proof of the job secret is wrong"), 2u) << log.all();            // replay, wrong secret
  EXPECT_GE(log.count("no complete job-secret handshake within 1 s"), 2u) << log.all();  // silent, half
  EXPECT_EQ(log.count("closed the connection from 127.0.0.1:"), log.lines.size()) << log.all();
  EXPECT_NE(log.all().find(fmt::format("rendezvous store on port {}", at.port)), std::string::npos) << log.all();
}

TEST(StoreUnderAttack, AFloodOfSilentConnectionsDoesNotKeepRanksOut) {
  LogLines log;
  Result<std::unique_ptr<StoreServer>> server = StoreServer::start("127.0.0.1", 0, job_secret(), log.sink(), 30.0);
  ASSERT_TRUE(server.is_ok());
  const Endpoint at{"127.0.0.1", (*server)->port()};
  std::vector<os::Fd> flood;
  for (size_t i = 0; i < kMaxPendingHandshakes + 40; ++i) flood.push_back(dial(at));
  Result<std::unique_ptr<StoreClient>> rank = StoreClient::connect(at, 5, "rank 0", job_secret());
  ASSERT_TRUE(rank.is_ok()) << rank.status().to_string();
  EXPECT_TRUE((*rank)->set("k", "v").is_ok());
  EXPECT_GE(seconds_until_closed(flood.front().get(), 2), 0) << "the oldest silent connection made room";
  EXPECT_GE(log.count("closed to make room"), 1u) << log.all();
}

// Bytes of a mesh hello (mesh_setup.cc): magic, set id, set rank.
std::string mesh_hello(int32_t set_id, int32_t rank) {
  const int32_t words[3] = {0x4b525644, set_id, rank};
  return std::string(reinterpret_cast<const char*>(words), sizeof words);
}

// A genuine proof for a mesh connection, recorded off a socket pair (the server's nonce of that
// recording, so it is worthless anywhere else).
std::string recorded_mesh_proof() {
  int sv[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  os::Fd client(sv[0]), server(sv[1]);
  std::string proof(kMagicBytes + kNonceBytes + 12 + kMacBytes, '\0');
  std::thread t([&] {
    ServerHandshake hs(job_secret(), "mesh", 12);
    (void)send_all(server.get(), hs.hello().data(), hs.hello().size(), deadline_after(2), "c");
    (void)recv_all(server.get(), proof.data(), proof.size(), deadline_after(2), "c");
    Result<std::string> answer = hs.verify(proof);
    if (answer.is_ok()) (void)send_all(server.get(), answer->data(), answer->size(), deadline_after(2), "c");
  });
  EXPECT_TRUE(
      authenticate_to_server(client.get(), job_secret(), "mesh", mesh_hello(0, 2), deadline_after(2), "rec").is_ok());
  t.join();
  return proof;
}

// Opens the usual intruders against one listener (silent, garbage, no secret, a replayed proof);
// they stay open until the vector goes.
std::vector<os::Fd> intrude(const Endpoint& at, const std::string& recorded_proof) {
  std::vector<os::Fd> held;
  held.push_back(dial(at));  // silent
  held.push_back(dial(at));
  (void)send_all(held.back().get(), "\x16\x03\x01garbage", 10, deadline_after(1), "mesh");
  held.push_back(dial(at));  // a rank's hello without a handshake: what a rank with no secret sends
  (void)send_all(held.back().get(), mesh_hello(0, 1).data(), 12, deadline_after(1), "mesh");
  held.push_back(dial(at));  // replay
  char hello[kHelloBytes];
  (void)recv_all(held.back().get(), hello, sizeof hello, deadline_after(2), "mesh");
  (void)send_all(held.back().get(), recorded_proof.data(), recorded_proof.size(), deadline_after(1), "mesh");
  return held;
}

TEST(MeshUnderAttack, RealPeersConnectWhileIntrudersAreRefused) {
  constexpr int n = 3;
  LogLines log;
  MeshAuth auth{job_secret(), log.sink(), 5.0, nullptr};
  std::vector<os::Fd> listeners;
  std::vector<std::string> endpoints;
  for (int r = 0; r < n; ++r) {
    listeners.push_back(listen_on("127.0.0.1", 0, SocketOptions{}, 16).value());
    endpoints.push_back(fmt::format("127.0.0.1:{}", local_port(listeners.back())));
  }
  const std::string proof = recorded_mesh_proof();
  std::mutex held_mu;
  std::vector<os::Fd> held;  // the intruders' sockets, open until the test ends
  std::vector<Status> insiders(2);
  // Rank r starts once the intruders of the ranks below it are through (stage >= r): every
  // attack meets a listener whose accept loop runs, and the silent ones are still pending when
  // the real peers connect.
  std::atomic<int> stage{0};
  auto attack = [&](int target) {
    const Endpoint at = *Endpoint::parse(endpoints[target]);
    std::vector<os::Fd> fds = intrude(at, proof);
    std::vector<std::thread> ts;
    if (target == 0) {
      // Intruders that do know the secret (a rank of this job misbehaving) but claim what they are not.
      for (int i = 0; i < 2; ++i) {
        ts.emplace_back([&, i] {
          os::Fd fd = dial(at);
          insiders[i] = authenticate_to_server(fd.get(), auth.secret, "mesh",
                                               i == 0 ? mesh_hello(7, 1) : mesh_hello(0, 9), deadline_after(3), "rank 0");
          seconds_until_closed(fd.get(), 3);
        });
      }
      ts.emplace_back([&] {
        os::Fd fd = dial(at);
        EXPECT_FALSE(authenticate_to_server(fd.get(), job_secret("a-wrong-secret-of-some-length"), "mesh",
                                            mesh_hello(0, 1), deadline_after(3), "rank 0")
                         .is_ok());
      });
    }
    for (auto& t : ts) t.join();
    std::lock_guard<std::mutex> lock(held_mu);
    for (os::Fd& fd : fds) held.push_back(std::move(fd));
  };
  std::thread attacker([&] {
    attack(0);
    stage = 1;
    attack(1);
    stage = 2;
  });

  std::vector<std::vector<os::Fd>> peers(n);
  std::vector<Status> status(n);
  const auto start = Clock::now();
  korovod::testing::run_ranks(n, [&](int r) {
    while (stage < r && Clock::now() - start < 10s) std::this_thread::sleep_for(1ms);
    Result<std::vector<os::Fd>> p =
        connect_mesh(listeners[r], endpoints, r, 0, SocketOptions{}, 10.0, std::vector<int>{10, 11, 12}, auth);
    status[r] = p.status();
    if (p.is_ok()) peers[r] = std::move(p).value();
  });
  const auto took = Clock::now() - start;
  attacker.join();
  for (int r = 0; r < n; ++r) ASSERT_TRUE(status[r].is_ok()) << "rank " << r << ": " << status[r].to_string();
  EXPECT_LT(took, 3s) << "the silent intruders (5 s handshake deadline) held the mesh up";

  // The mesh carries data between the real ranks.
  std::vector<int32_t> got(n * n, -1);
  korovod::testing::run_ranks(n, [&](int r) {
    Mesh mesh(r, std::move(peers[r]), {10, 11, 12}, 5.0);
    std::vector<PeerIo> io(n);
    const int32_t mine = 100 + r;
    for (int p = 0; p < n; ++p) {
      if (p == r) continue;
      io[p] = {reinterpret_cast<const std::byte*>(&mine), 4, 0, reinterpret_cast<std::byte*>(&got[r * n + p]), 4, 0};
    }
    EXPECT_TRUE(mesh.exchange(io, "test").is_ok());
  });
  for (int r = 0; r < n; ++r) {
    for (int p = 0; p < n; ++p) {
      if (p != r) {
        EXPECT_EQ(got[r * n + p], 100 + p) << "rank " << r << " from " << p;
      }
    }
  }
  EXPECT_GE(log.count("something other than a job-secret handshake"), 4u) << log.all();  // garbage, no secret
  EXPECT_GE(log.count("proof of the job secret is wrong"), 3u) << log.all();  // 2 replays, 1 wrong secret
  EXPECT_EQ(log.count("rank 10 (process set 0): closed the connection from 127.0.0.1:") +
                log.count("rank 11 (process set 0): closed the connection from 127.0.0.1:"),
            log.lines.size())
      << log.all();
  EXPECT_EQ(log.count("it is a rank of process set 7"), 1u) << log.all();
  EXPECT_EQ(log.count("it claims set rank 9"), 1u) << log.all();
  EXPECT_TRUE(insiders[0].is_ok() && insiders[1].is_ok()) << "they knew the secret: refused after the handshake";
}

TEST(TcpTransportNoSecret, RankZeroWarnsNamingTheVariable) {
  TcpWorldConfig world;
  world.rendezvous_addr = "127.0.0.1";
  world.server_listen_host = "127.0.0.1";
  world.rank = 0;
  world.size = 1;
  world.start_timeout_seconds = 5;
  LogLines log;
  Result<std::shared_ptr<TcpTransportProvider>> t = TcpTransportProvider::create(world, "lo", SystemEnv().host(), log.sink());
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_EQ(log.count("no job secret (KOROVOD_JOB_SECRET_FILE is not set)"), 1u) << log.all();
  world.job_secret = kSecretText;
  LogLines quiet;
  ASSERT_TRUE(TcpTransportProvider::create(world, "lo", SystemEnv().host(), quiet.sink()).is_ok());
  EXPECT_EQ(quiet.lines.size(), 0u) << quiet.all();
}

}  // namespace
}  // namespace korovod::tcp
