// A TCP proxy on 127.0.0.1 between the operator and the API server. Bytes pass unchanged (TLS
// stays end to end: the serving certificate names 127.0.0.1); cut() ends live connections the
// way a network blip or a restarting load balancer does, so watches, and requests in flight
// whose answer may or may not have been applied, break at chosen moments.
#pragma once

#include <atomic>
#include <list>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

namespace chaos {

class ChaosProxy {
 public:
  explicit ChaosProxy(int upstream_port);
  ~ChaosProxy();
  ChaosProxy(const ChaosProxy&) = delete;
  ChaosProxy& operator=(const ChaosProxy&) = delete;

  int port() const { return port_; }
  // Ends each live connection with probability `fraction` (1 = all); returns how many ended.
  int cut(std::mt19937& rng, double fraction = 1.0);
  // While refusing, new connections are closed at once (a load balancer with no backend).
  void set_refusing(bool refusing) { refusing_ = refusing; }
  int accepted() const { return accepted_; }
  int cut_total() const { return cut_total_; }

 private:
  struct Connection {
    int client = -1, upstream = -1;
    std::thread to_upstream, to_client;
    std::atomic<int> pumps_done{0};
  };
  void accept_loop();
  void reap_finished();  // joins and closes connections whose both directions ended
  static void pump(int from, int to, Connection& c);

  const int upstream_port_;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};  // stop() writes here to end accept_loop's poll
  int port_ = 0;
  std::atomic<int> accepted_{0}, cut_total_{0};
  std::atomic<bool> refusing_{false};
  std::mutex mu_;
  std::list<std::unique_ptr<Connection>> connections_;  // GUARDED_BY(mu_)
  std::thread acceptor_;
};

}  // namespace chaos
