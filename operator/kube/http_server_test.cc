#include "kube/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>

namespace kube {
namespace {

struct Reply {
  int status = 0;
  std::string head;
  std::string body;
};

// A real HTTP/1.1 exchange over a socket, independent of the server's code.
Reply http_request(uint16_t port, const std::string& method, const std::string& target,
                   const std::string& body = "") {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return {};
  }
  const std::string req = method + " " + target + " HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n" + body;
  EXPECT_EQ(::send(fd, req.data(), req.size(), 0), ssize_t(req.size()));
  std::string data;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) data.append(buf, size_t(n));
  ::close(fd);
  Reply r;
  const auto end = data.find("\r\n\r\n");
  if (end == std::string::npos) return r;
  r.head = data.substr(0, end);
  r.body = data.substr(end + 4);
  r.status = std::stoi(r.head.substr(9, 3));
  return r;
}

TEST(HttpServerTest, PicksAFreePortAndServesHealthzOk) {
  HttpServer server("127.0.0.1", 0);
  const uint16_t port = server.start();
  ASSERT_NE(port, 0);
  EXPECT_EQ(server.port(), port);
  server.add_healthz_check("ping", [] { return CheckResult::healthy(); });
  const Reply r = http_request(port, "GET", "/healthz");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ok");
  EXPECT_NE(r.head.find("Content-Length: 2"), std::string::npos);
}

TEST(HttpServerTest, ReadyzFailsWithTheFailingChecksReason) {
  HttpServer server("127.0.0.1", 0);
  const uint16_t port = server.start();
  std::atomic<bool> synced{false};
  server.add_readyz_check("informers", [&] {
    return synced ? CheckResult::healthy() : CheckResult::failed("pods not synced");
  });
  server.add_readyz_check("leader", [] { return CheckResult::healthy(); });
  Reply r = http_request(port, "GET", "/readyz");
  EXPECT_EQ(r.status, 500);
  EXPECT_NE(r.body.find("[-]informers failed: pods not synced"), std::string::npos);
  EXPECT_NE(r.body.find("[+]leader ok"), std::string::npos);
  synced = true;
  EXPECT_EQ(http_request(port, "GET", "/readyz").status, 200);
  r = http_request(port, "GET", "/readyz?verbose");
  EXPECT_NE(r.body.find("[+]informers ok"), std::string::npos);
  EXPECT_EQ(http_request(port, "GET", "/readyz/leader").status, 200);
  EXPECT_EQ(http_request(port, "GET", "/readyz/nope").status, 404);
}

TEST(HttpServerTest, ThrowingCheckCountsAsFailed) {
  HttpServer server("127.0.0.1", 0);
  const uint16_t port = server.start();
  server.add_healthz_check("boom", []() -> CheckResult { throw std::runtime_error("kaput"); });
  const Reply r = http_request(port, "GET", "/healthz");
  EXPECT_EQ(r.status, 500);
  EXPECT_NE(r.body.find("[-]boom failed: kaput"), std::string::npos);
}

TEST(HttpServerTest, MetricsComeFromTheRenderCallback) {
  HttpServer server("127.0.0.1", 0);
  const uint16_t port = server.start();
  EXPECT_EQ(http_request(port, "GET", "/metrics").status, 404);
  int scrapes = 0;
  server.set_metrics([&] { return "korovod_scrapes " + std::to_string(++scrapes) + "\n"; });
  const Reply r = http_request(port, "GET", "/metrics");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "korovod_scrapes 1\n");
  EXPECT_NE(r.head.find("text/plain; version=0.0.4"), std::string::npos);
  EXPECT_EQ(http_request(port, "POST", "/metrics").status, 405);
}

TEST(HttpServerTest, CustomHandlerSeesMethodQueryHeadersAndBody) {
  HttpServer server("127.0.0.1", 0);
  const uint16_t port = server.start();
  HttpRequest seen;
  server.handle("/echo", [&](const HttpRequest& req) {
    seen = req;
    return HttpResponse{201, "application/json", "{}", {{"X-Test", "1"}}};
  });
  const Reply r = http_request(port, "PUT", "/echo?a=b", "payload");
  EXPECT_EQ(r.status, 201);
  EXPECT_NE(r.head.find("X-Test: 1"), std::string::npos);
  EXPECT_EQ(seen.method, "PUT");
  EXPECT_EQ(seen.path, "/echo");
  EXPECT_EQ(seen.query, "a=b");
  EXPECT_EQ(seen.header("host"), "x");
  EXPECT_EQ(seen.body, "payload");
  EXPECT_EQ(http_request(port, "GET", "/unknown").status, 404);
}

TEST(HttpServerTest, StopIsIdempotentAndFreesThePort) {
  HttpServer server("127.0.0.1", 0);
  const uint16_t port = server.start();
  server.stop();
  server.stop();
  EXPECT_EQ(http_request(port, "GET", "/healthz").status, 0);  // connection refused
  HttpServer again("127.0.0.1", port);
  EXPECT_EQ(again.start(), port);
}

TEST(HttpServerTest, BindFailureThrows) {
  HttpServer first("127.0.0.1", 0);
  const uint16_t port = first.start();
  HttpServer second("127.0.0.1", port);
  EXPECT_THROW(second.start(), std::system_error);
}

}  // namespace
}  // namespace kube
