// RestClient against a scripted fake API server (HttpServer over plain HTTP): what goes on the
// wire, how responses and Status errors come back, retries, watch parsing and concurrency.
// TLS and the real API server are covered by tests/integration/kube.
#include "kube/rest_client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "kube/api_error.h"
#include "kube/fake_clock.h"
#include "kube/http_server.h"

namespace kube {
namespace {

const Resource kPod{"", "v1", "pods", "Pod", true};

HttpResponse json(int status, const Object& body) {
  return {status, "application/json", body.dump(), {}};
}

HttpResponse status_error(int code, const std::string& reason, const std::string& message) {
  return json(code, {{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"},
                     {"code", code}, {"reason", reason}, {"message", message}});
}

class RestClientTest : public ::testing::Test {
 protected:
  RestClientTest() : server_("127.0.0.1", 0) {
    server_.start();
    config_.server = "http://127.0.0.1:" + std::to_string(server_.port());
    config_.token = "tok";
    options_.qps = 0;  // unlimited: these tests are about the wire, not the limiter
    options_.initial_backoff = std::chrono::milliseconds(1);
  }
  RestClient client() { return RestClient(config_, options_); }

  HttpServer server_;
  Config config_;
  RestClientOptions options_;
};

TEST_F(RestClientTest, GetSendsBearerTokenAndUserAgentAndFillsTypeMeta) {
  HttpRequest seen;
  server_.handle("/api/v1/namespaces/ns/pods/p", [&](const HttpRequest& req) {
    seen = req;
    return json(200, {{"metadata", {{"name", "p"}}}});
  });
  const Object pod = client().get(kPod, "ns", "p");
  EXPECT_EQ(pod["metadata"]["name"], "p");
  EXPECT_EQ(pod["kind"], "Pod");
  EXPECT_EQ(pod["apiVersion"], "v1");
  EXPECT_EQ(seen.method, "GET");
  EXPECT_EQ(seen.header("authorization"), "Bearer tok");
  EXPECT_TRUE(seen.header("user-agent").starts_with("korovod/")) << seen.header("user-agent");
  EXPECT_EQ(seen.header("accept"), "application/json");
}

TEST_F(RestClientTest, ListReturnsItemsResourceVersionAndContinue) {
  HttpRequest seen;
  server_.handle("/api/v1/pods", [&](const HttpRequest& req) {
    seen = req;
    return json(200, {{"metadata", {{"resourceVersion", "42"}, {"continue", "next"}}},
                      {"items", {{{"metadata", {{"name", "a"}}}}, {{"metadata", {{"name", "b"}}}}}}});
  });
  ListOptions o;
  o.limit = 2;
  o.label_selector = "app=x";
  const ListResult r = client().list(kPod, "", o);
  ASSERT_EQ(r.items.size(), 2u);
  EXPECT_EQ(r.items[1]["metadata"]["name"], "b");
  EXPECT_EQ(r.items[1]["kind"], "Pod");
  EXPECT_EQ(r.resource_version, "42");
  EXPECT_EQ(r.continue_token, "next");
  EXPECT_EQ(seen.query, "labelSelector=app%3Dx&limit=2");
}

TEST_F(RestClientTest, StatusErrorsBecomeApiErrors) {
  server_.handle("/api/v1/namespaces/ns/pods/p", [&](const HttpRequest& req) {
    if (req.method == "PUT") return status_error(409, "Conflict", "the object has been modified");
    return status_error(404, "NotFound", "pods \"p\" not found");
  });
  auto c = client();
  try {
    c.get(kPod, "ns", "p");
    ADD_FAILURE();
  } catch (const ApiError& e) {
    EXPECT_TRUE(is_not_found(e));
    EXPECT_EQ(e.api_message(), "pods \"p\" not found");
  }
  try {
    c.update(kPod, "ns", {{"metadata", {{"name", "p"}, {"resourceVersion", "1"}}}});
    ADD_FAILURE();
  } catch (const ApiError& e) {
    EXPECT_TRUE(is_conflict(e));
  }
}

TEST_F(RestClientTest, CreateUsesObjectNamespaceAndPostsJson) {
  HttpRequest seen;
  server_.handle("/api/v1/namespaces/from-obj/pods", [&](const HttpRequest& req) {
    seen = req;
    return json(201, Object::parse(req.body));
  });
  const Object pod = {{"metadata", {{"name", "p"}, {"namespace", "from-obj"}}}};
  EXPECT_EQ(client().create(kPod, "", pod), pod);
  EXPECT_EQ(seen.method, "POST");
  EXPECT_TRUE(seen.header("content-type").starts_with("application/json"));
}

TEST_F(RestClientTest, PatchSendsContentTypeFieldManagerForceAndStatusPath) {
  HttpRequest seen;
  server_.handle("/api/v1/namespaces/ns/pods/p/status", [&](const HttpRequest& req) {
    seen = req;
    return json(200, {{"ok", true}});
  });
  PatchOptions o;
  o.field_manager = "korovod";
  o.force = true;
  o.status = true;
  client().patch(kPod, "ns", "p", PatchType::Apply, R"({"status":{}})", o);
  EXPECT_EQ(seen.method, "PATCH");
  EXPECT_TRUE(seen.header("content-type").starts_with("application/apply-patch+yaml"));
  EXPECT_EQ(seen.query, "fieldManager=korovod&force=true");
  EXPECT_EQ(seen.body, R"({"status":{}})");
}

TEST_F(RestClientTest, DeleteSendsPropagationAndPreconditions) {
  HttpRequest seen;
  server_.handle("/api/v1/namespaces/ns/pods/p", [&](const HttpRequest& req) {
    seen = req;
    return json(200, {{"kind", "Status"}, {"status", "Success"}});
  });
  DeleteOptions o;
  o.propagation_policy = "Foreground";
  o.precondition_uid = "u1";
  o.precondition_resource_version = "7";
  client().remove(kPod, "ns", "p", o);
  EXPECT_EQ(seen.method, "DELETE");
  const Object body = Object::parse(seen.body);
  EXPECT_EQ(body["propagationPolicy"], "Foreground");
  EXPECT_EQ(body["preconditions"]["uid"], "u1");
  EXPECT_EQ(body["preconditions"]["resourceVersion"], "7");
  EXPECT_FALSE(body.contains("gracePeriodSeconds"));
  o.grace_period_seconds = 0;
  client().remove(kPod, "ns", "p", o);
  EXPECT_EQ(Object::parse(seen.body)["gracePeriodSeconds"], 0);
}

TEST_F(RestClientTest, RetriesTooManyRequestsThenSucceeds) {
  std::atomic<int> calls{0};
  server_.handle("/api/v1/namespaces/ns/pods", [&](const HttpRequest&) {
    if (++calls < 3) {
      HttpResponse r = status_error(429, "TooManyRequests", "slow down");
      r.headers.emplace_back("Retry-After", "0");
      return r;
    }
    return json(201, {{"created", true}});
  });
  EXPECT_EQ(client().create(kPod, "ns", {{"metadata", {{"name", "p"}}}})["created"], true);
  EXPECT_EQ(calls, 3);
}

TEST_F(RestClientTest, HonoursRetryAfterOnTheInjectedClock) {
  std::atomic<int> calls{0};
  server_.handle("/api/v1/namespaces/ns/pods/p", [&](const HttpRequest&) {
    if (++calls == 1) {
      HttpResponse r = status_error(503, "ServiceUnavailable", "busy");
      r.headers.emplace_back("Retry-After", "2");
      return r;
    }
    return json(200, {{"metadata", {{"name", "p"}}}});
  });
  FakeClock clock;
  RestClient c(config_, options_, clock);
  auto result = std::async(std::launch::async, [&] { return c.get(kPod, "ns", "p"); });
  ASSERT_TRUE(clock.wait_for_waiters(1));
  clock.advance(std::chrono::milliseconds(1999));
  EXPECT_EQ(result.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  EXPECT_EQ(calls, 1);
  clock.advance(std::chrono::milliseconds(1));
  EXPECT_EQ(result.get()["metadata"]["name"], "p");
  EXPECT_EQ(calls, 2);
}

TEST_F(RestClientTest, ServerErrorsOnCreateAreNotRetriedButGetGivesUpAfterMaxAttempts) {
  std::atomic<int> calls{0};
  server_.handle("/api/v1/namespaces/ns/pods", [&](const HttpRequest&) {
    ++calls;
    return status_error(500, "InternalError", "etcd hiccup");
  });
  server_.handle("/api/v1/namespaces/ns/pods/p", [&](const HttpRequest&) {
    ++calls;
    return status_error(503, "ServiceUnavailable", "down");
  });
  options_.max_attempts = 3;
  auto c = client();
  EXPECT_THROW(c.create(kPod, "ns", {{"metadata", {{"name", "p"}}}}), ApiError);
  EXPECT_EQ(calls, 1);
  calls = 0;
  try {
    c.get(kPod, "ns", "p");
    ADD_FAILURE();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.code(), 503);
  }
  EXPECT_EQ(calls, 3);
}

TEST_F(RestClientTest, ConnectionRefusedIsAClearConnectionError) {
  server_.stop();
  options_.max_attempts = 2;
  try {
    client().get(kPod, "ns", "p");
    ADD_FAILURE();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.code(), 0);
    EXPECT_EQ(e.reason(), "ConnectionFailed");
    EXPECT_NE(e.api_message().find(config_.server), std::string::npos) << e.what();
  }
}

TEST_F(RestClientTest, WatchDeliversEventsInOrderThenEnds) {
  HttpRequest seen;
  server_.handle("/api/v1/namespaces/ns/pods", [&](const HttpRequest& req) {
    seen = req;
    return HttpResponse{200, "application/json",
                        R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"5"}}})"
                        "\n"
                        R"({"type":"MODIFIED","object":{"metadata":{"name":"a","resourceVersion":"6"}}})"
                        "\n",
                        {}};
  });
  ListOptions o;
  o.resource_version = "4";
  auto w = client().watch(kPod, "ns", o);
  auto e1 = w->next(std::chrono::seconds(5));
  auto e2 = w->next(std::chrono::seconds(5));
  ASSERT_TRUE(e1 && e2);
  EXPECT_EQ(e1->type, WatchEvent::Type::Added);
  EXPECT_EQ(e2->type, WatchEvent::Type::Modified);
  EXPECT_EQ(e2->object["metadata"]["resourceVersion"], "6");
  EXPECT_FALSE(w->next(std::chrono::seconds(5)).has_value());
  EXPECT_TRUE(w->ended());
  EXPECT_EQ(seen.query, "watch=true&resourceVersion=4&allowWatchBookmarks=true&timeoutSeconds=300");
}

TEST_F(RestClientTest, WatchErrorEventIsDeliveredAndEndsTheStream) {
  server_.handle("/api/v1/pods", [&](const HttpRequest&) {
    return HttpResponse{200, "application/json",
                        R"j({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old resource version: 1 (50)"}})j"
                        "\n",
                        {}};
  });
  auto w = client().watch(kPod, "", ListOptions{});
  const auto e = w->next(std::chrono::seconds(5));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->type, WatchEvent::Type::Error);
  EXPECT_TRUE(is_gone(from_status(0, e->object)));
  EXPECT_FALSE(w->next(std::chrono::seconds(1)).has_value());
  EXPECT_TRUE(w->ended());
}

TEST_F(RestClientTest, WatchRejectedAtStartThrows) {
  server_.handle("/api/v1/pods", [&](const HttpRequest&) {
    return status_error(403, "Forbidden", "pods is forbidden");
  });
  try {
    client().watch(kPod, "", ListOptions{});
    ADD_FAILURE();
  } catch (const ApiError& e) {
    EXPECT_TRUE(is_forbidden(e));
  }
}

TEST_F(RestClientTest, ManyThreadsShareOneClient) {
  std::atomic<int> calls{0};
  server_.handle("/api/v1/namespaces/ns/pods", [&](const HttpRequest& req) {
    ++calls;
    return json(201, Object::parse(req.body));
  });
  auto c = client();
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5; ++i) {
        const std::string name = "p" + std::to_string(t) + "-" + std::to_string(i);
        if (c.create(kPod, "ns", {{"metadata", {{"name", name}}}})["metadata"]["name"] == name) ++ok;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok, 80);
  EXPECT_EQ(calls, 80);
}

TEST_F(RestClientTest, RateLimiterSpacesRequests) {
  server_.handle("/api/v1/namespaces/ns/pods/p", [&](const HttpRequest&) {
    return json(200, {{"metadata", {{"name", "p"}}}});
  });
  options_.qps = 20;
  options_.burst = 1;
  auto c = client();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 5; ++i) c.get(kPod, "ns", "p");
  // 1 token at once, then 4 at 50 ms each.
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(190));
}

TEST(RestClientConfigTest, UnusableCaPemFailsAtConstruction) {
  Config c;
  c.server = "https://127.0.0.1:1";
  c.ca_pem = "not a certificate";
  EXPECT_THROW(RestClient{c}, ConfigError);
}

}  // namespace
}  // namespace kube
