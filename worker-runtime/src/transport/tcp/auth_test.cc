// The job-secret handshake itself (transport/tcp/auth.h) over socket pairs: both sides accept a
// shared secret and nothing else (a wrong secret, a replayed proof or answer, a tampered payload,
// garbage), the secret never crosses the wire; the secret's sources (KOROVOD_JOB_SECRET,
// KOROVOD_JOB_SECRET_FILE) and their errors, which never show the value.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <thread>

#include "korovod/tcp.h"
#include "transport/tcp/auth.h"

namespace korovod::tcp {
namespace {

JobSecret secret(const std::string& text) {
  Result<JobSecret> s = JobSecret::from_text(text, "the test");
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  return s.is_ok() ? std::move(s).value() : JobSecret();
}

std::pair<os::Fd, os::Fd> socket_pair() {
  int sv[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  return {os::Fd(sv[0]), os::Fd(sv[1])};
}

std::string read_exactly(int fd, size_t n) {
  std::string out(n, '\0');
  Status s = recv_all(fd, out.data(), n, deadline_after(5), "the test peer");
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return out;
}

void write_all(int fd, const std::string& bytes) {
  EXPECT_TRUE(send_all(fd, bytes.data(), bytes.size(), deadline_after(5), "the test peer").is_ok());
}

// The server side of one handshake over `fd`, as HandshakeGate drives it, but blocking: the
// proof it read, and the verdict.
struct ServerRun {
  std::string proof;
  Result<std::string> answer = Status::unknown("not run");
  std::string payload;
};

ServerRun serve_once(int fd, const JobSecret& s, size_t payload_bytes, const std::string& purpose = "store") {
  ServerHandshake hs(s, purpose, payload_bytes);
  write_all(fd, hs.hello());
  ServerRun run;
  run.proof = read_exactly(fd, hs.proof_bytes());
  run.answer = hs.verify(run.proof);
  if (run.answer.is_ok()) {
    write_all(fd, *run.answer);
    run.payload = hs.payload();
  }
  return run;
}

TEST(Handshake, SameSecretPassesBothWaysAndCarriesThePayload) {
  const JobSecret s = secret("correct horse battery staple");
  auto [client, server] = socket_pair();
  ServerRun run;
  std::thread t([&, fd = server.get()] { run = serve_once(fd, s, 5, "mesh"); });
  Status st = authenticate_to_server(client.get(), s, "mesh", "hello", deadline_after(5), "the server");
  t.join();
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  ASSERT_TRUE(run.answer.is_ok()) << run.answer.status().to_string();
  EXPECT_EQ(run.payload, "hello");
}

TEST(Handshake, WrongSecretIsRefusedAndTheClientSaysWhy) {
  auto [client, server] = socket_pair();
  ServerRun run;
  std::thread t([&, fd = server.get()] {
    run = serve_once(fd, secret("the job's real secret, 32 bytes"), 0);
    ::shutdown(fd, SHUT_RDWR);  // as the gate closes a refused connection
  });
  Status st = authenticate_to_server(client.get(), secret("a guess at the secret, 32 bytes"), "store", "",
                                     deadline_after(5), "the rendezvous store at 10.0.0.1:99");
  t.join();
  ASSERT_FALSE(run.answer.is_ok());
  EXPECT_NE(run.answer.status().message().find("proof of the job secret is wrong"), std::string::npos);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("the rendezvous store at 10.0.0.1:99"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("refused this side's proof"), std::string::npos) << st.message();
}

TEST(Handshake, AProofRecordedOnOneConnectionFailsOnTheNext) {
  const JobSecret s = secret("0123456789abcdef0123456789abcdef");
  auto [client, server] = socket_pair();
  ServerRun first;
  std::thread t([&, fd = server.get()] { first = serve_once(fd, s, 12, "mesh"); });
  ASSERT_TRUE(authenticate_to_server(client.get(), s, "mesh", "set 0 rank 2", deadline_after(5), "peer").is_ok());
  t.join();
  ASSERT_TRUE(first.answer.is_ok());
  // The recorded bytes, sent again to a server with a fresh nonce.
  ServerHandshake again(s, "mesh", 12);
  Result<std::string> replayed = again.verify(first.proof);
  ASSERT_FALSE(replayed.is_ok());
  EXPECT_NE(replayed.status().message().find("replayed"), std::string::npos);
  // Nor does it pass for another kind of connection.
  ServerHandshake store(s, "store", 12);
  EXPECT_FALSE(store.verify(first.proof).is_ok());
}

TEST(Handshake, ARecordedAnswerDoesNotConvinceTheNextClient) {
  const JobSecret s = secret("0123456789abcdef0123456789abcdef");
  auto [c1, s1] = socket_pair();
  ServerRun real;
  std::thread t1([&, fd = s1.get()] { real = serve_once(fd, s, 0); });
  ASSERT_TRUE(authenticate_to_server(c1.get(), s, "store", "", deadline_after(5), "peer").is_ok());
  t1.join();
  ASSERT_TRUE(real.answer.is_ok());
  // An impostor replays a genuine hello and answer without knowing the secret.
  auto [c2, s2] = socket_pair();
  std::thread t2([&, fd = s2.get()] {
    write_all(fd, "KRVH" + std::string(kNonceBytes, 'n'));
    read_exactly(fd, kMagicBytes + kNonceBytes + kMacBytes);
    write_all(fd, *real.answer);
  });
  Status st = authenticate_to_server(c2.get(), s, "store", "", deadline_after(5), "an impostor");
  t2.join();
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("does not prove the job secret"), std::string::npos) << st.message();
}

TEST(Handshake, TamperedPayloadAndGarbageAreRefused) {
  const JobSecret s = secret("0123456789abcdef0123456789abcdef");
  auto [client, server] = socket_pair();
  std::string proof;
  std::thread t([&, fd = server.get()] {
    ServerHandshake hs(s, "mesh", 4);
    write_all(fd, hs.hello());
    proof = read_exactly(fd, hs.proof_bytes());
    std::string tampered = proof;
    tampered[kMagicBytes + kNonceBytes] ^= 1;  // rank 1 claims to be rank 0
    EXPECT_FALSE(hs.verify(tampered).is_ok());
    ::shutdown(fd, SHUT_RDWR);
  });
  EXPECT_FALSE(authenticate_to_server(client.get(), s, "mesh", "r001", deadline_after(5), "peer").is_ok());
  t.join();
  ServerHandshake hs(s, "store", 0);
  EXPECT_FALSE(hs.check_prefix("GET / HTTP/1.1").is_ok());
  EXPECT_FALSE(hs.check_prefix(std::string("\x01\x00\x00", 3)).is_ok()) << "a store request from a rank without the secret";
  EXPECT_TRUE(hs.check_prefix("KRV").is_ok()) << "too early to tell";
  EXPECT_FALSE(hs.verify("short").is_ok());
}

TEST(Handshake, TheSecretNeverCrossesTheWire) {
  const std::string text = "a-very-recognisable-job-secret-value";
  const JobSecret s = secret(text);
  auto [client, server] = socket_pair();
  ServerRun run;
  std::string answer;
  std::thread t([&, fd = server.get()] { run = serve_once(fd, s, 3); });
  ASSERT_TRUE(authenticate_to_server(client.get(), s, "store", "abc", deadline_after(5), "peer").is_ok());
  t.join();
  ASSERT_TRUE(run.answer.is_ok());
  const std::string wire = run.proof + *run.answer;
  EXPECT_EQ(wire.find(text), std::string::npos);
  EXPECT_EQ(wire.find(text.substr(0, 8)), std::string::npos);
}

TEST(Handshake, WithoutASecretOnlyThePayloadGoesOut) {
  auto [client, server] = socket_pair();
  ASSERT_TRUE(authenticate_to_server(client.get(), JobSecret(), "mesh", "12345", deadline_after(5), "peer").is_ok());
  ServerHandshake hs(JobSecret(), "mesh", 5);
  EXPECT_TRUE(hs.hello().empty());
  const std::string got = read_exactly(server.get(), hs.proof_bytes());
  ASSERT_TRUE(hs.verify(got).is_ok());
  EXPECT_EQ(hs.payload(), "12345");
}

TEST(JobSecretText, TrimsTheNewlineRefusesShortOnesWithoutShowingThem) {
  Result<JobSecret> s = JobSecret::from_text("0123456789abcdef0123\n", "KOROVOD_JOB_SECRET");
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(s->text(), "0123456789abcdef0123");
  Result<JobSecret> short_one = JobSecret::from_text("hunter2\n", "KOROVOD_JOB_SECRET_FILE=/x");
  ASSERT_FALSE(short_one.is_ok());
  EXPECT_NE(short_one.status().message().find("KOROVOD_JOB_SECRET_FILE=/x"), std::string::npos);
  EXPECT_EQ(short_one.status().message().find("hunter2"), std::string::npos);
  const JobSecret a = JobSecret::generate(), b = JobSecret::generate();
  EXPECT_EQ(a.text().size(), 64u);
  EXPECT_EQ(a.text().find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(a.text(), b.text());
}

}  // namespace
}  // namespace korovod::tcp

namespace korovod {
namespace {

EnvMap world_env() {
  return {{"KOROVOD_RENDEZVOUS_ADDR", "127.0.0.1"}, {"KOROVOD_RENDEZVOUS_PORT", "4000"},
          {"KOROVOD_RANK", "0"}, {"KOROVOD_SIZE", "2"}};
}

std::string temp_file(const std::string& content) {
  char path[] = "/tmp/korovod-secret-XXXXXX";
  const int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(write(fd, content.data(), content.size()), static_cast<ssize_t>(content.size()));
  close(fd);
  return path;
}

TEST(TcpWorldSecret, FromTheFileTheVariableNamesOrTheValueItself) {
  EnvMap env = world_env();
  Result<TcpWorldConfig> none = parse_tcp_world(env);
  ASSERT_TRUE(none.is_ok());
  EXPECT_TRUE(none->job_secret.empty());

  const std::string file = temp_file("fedcba9876543210fedcba9876543210\n");
  env["KOROVOD_JOB_SECRET_FILE"] = file;
  Result<TcpWorldConfig> from_file = parse_tcp_world(env);
  ASSERT_TRUE(from_file.is_ok()) << from_file.status().to_string();
  EXPECT_EQ(from_file->job_secret, "fedcba9876543210fedcba9876543210");

  env["KOROVOD_JOB_SECRET"] = "korovodrun's-own-secret-for-this-run";
  EXPECT_EQ(parse_tcp_world(env)->job_secret, "korovodrun's-own-secret-for-this-run") << "the value wins";
  std::remove(file.c_str());
}

TEST(TcpWorldSecret, UnreadableOrShortSecretIsAnErrorNamingTheVariable) {
  EnvMap env = world_env();
  env["KOROVOD_JOB_SECRET_FILE"] = "/nonexistent/korovod/secret";
  Result<TcpWorldConfig> missing = parse_tcp_world(env);
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("KOROVOD_JOB_SECRET_FILE=/nonexistent/korovod/secret"), std::string::npos)
      << missing.status().message();
  const std::string file = temp_file("tiny\n");
  env["KOROVOD_JOB_SECRET_FILE"] = file;
  Result<TcpWorldConfig> tiny = parse_tcp_world(env);
  ASSERT_FALSE(tiny.is_ok());
  EXPECT_NE(tiny.status().message().find("at least 16"), std::string::npos) << tiny.status().message();
  EXPECT_EQ(tiny.status().message().find("tiny"), std::string::npos) << "never the value";
  std::remove(file.c_str());
}

}  // namespace
}  // namespace korovod
