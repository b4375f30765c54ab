// HttpServer: the operator's probe and metrics endpoint (/healthz, /readyz, /metrics), plus
// extra handlers (tests use it as a scripted fake API server).
//
// A small blocking-socket server on one thread, chosen over cpprestsdk's listener because it
// can bind port 0 and report the port, and keeps Boost out of everything that includes this.
// Requests are served one at a time with a read timeout: probes and scrapes are tiny.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "kube/mutex.h"

namespace kube {

struct HttpRequest {
  std::string method;  // "GET"
  std::string path;    // "/healthz", without the query
  std::string query;   // "verbose" (after '?', undecoded), "" when none
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;

  std::string header(const std::string& lower_name) const;  // "" when absent
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
};

// What a health or readiness check reports.
struct CheckResult {
  bool ok = true;
  std::string message;  // why it failed (shown in the probe's body)

  static CheckResult healthy() { return {true, ""}; }
  static CheckResult failed(std::string why) { return {false, std::move(why)}; }
};

class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;
  using Check = std::function<CheckResult()>;  // a throwing check counts as failed

  // address "" or "0.0.0.0" = every IPv4 interface, "::" = every interface; port 0 = any free
  // port (see port() after start()).
  HttpServer(std::string address, uint16_t port);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Checks may be added at any time (controllers register readiness as they start).
  void add_healthz_check(const std::string& name, Check check);
  void add_readyz_check(const std::string& name, Check check);
  // The /metrics body (Prometheus text format), e.g. from the metrics registry.
  void set_metrics(std::function<std::string()> render);
  // Serves `path` (exact match, any method) with `handler`; replaces a built-in path too.
  void handle(const std::string& path, Handler handler);

  // Binds, listens and starts serving; returns the bound port. Throws std::system_error.
  uint16_t start();
  // Stops serving and joins the thread; idempotent.
  void stop();
  uint16_t port() const { return port_; }

 private:
  void serve();
  void serve_connection(int fd);
  HttpResponse dispatch(const HttpRequest& req);
  HttpResponse run_checks(const std::string& probe,
                          const std::vector<std::pair<std::string, Check>>& checks,
                          const HttpRequest& req);

  // Constant after construction.
  const std::string address_;
  const uint16_t requested_port_;

  Mutex mu_;
  std::vector<std::pair<std::string, Check>> healthz_ KOROVOD_GUARDED_BY(mu_);
  std::vector<std::pair<std::string, Check>> readyz_ KOROVOD_GUARDED_BY(mu_);
  std::function<std::string()> metrics_ KOROVOD_GUARDED_BY(mu_);
  std::map<std::string, Handler> handlers_ KOROVOD_GUARDED_BY(mu_);

  // Owned by start()/stop().
  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};  // written by stop() to end the poll in serve()
  std::atomic<uint16_t> port_{0};
  std::thread thread_;
};

}  // namespace kube
