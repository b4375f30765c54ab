// The rendezvous store: a small key/value server over TCP that rank 0 hosts when the runtime
// starts without MPI (KOROVOD_RENDEZVOUS_ADDR / _PORT, docs/runtime-config.md), and its client.
// Ranks publish their listen addresses and host identities in it and wait for each other's.
// With a job secret, every connection proves it (auth.h, purpose "store") before the server
// reads a single request from it.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/mutex.h"
#include "core/thread_annotations.h"
#include "transport/tcp/handshake_gate.h"
#include "transport/tcp/socket.h"
#include "transport/tcp/store_protocol.h"

namespace korovod::tcp {

class StoreServer {
 public:
  // Listens on host:port (port 0: ephemeral, see port()) and serves on a thread of its own.
  // Connections that fail the handshake with `secret` (none: no handshake) are closed and
  // reported to `log` with their address, at most `handshake_seconds` after they were accepted
  // on `clock` (null: the system's).
  static Result<std::unique_ptr<StoreServer>> start(const std::string& host, int port, JobSecret secret = {},
                                                    AuthLog log = {},
                                                    double handshake_seconds = kHandshakeTimeoutSeconds,
                                                    std::shared_ptr<const Clock> clock = nullptr);
  ~StoreServer();  // stops the thread and closes every connection
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;
  int port() const { return port_; }

 private:
  struct Client {
    os::Fd fd;
    std::string in, out;
    std::vector<std::string> waiting_for;  // keys of parked gets, answered in order
  };
  StoreServer(os::Fd listener, os::Fd wake_read, os::Fd wake_write, std::shared_ptr<const Clock> clock,
              HandshakeGate gate);
  void serve();
  void accept_new();
  bool handle_input(Client& c);  // false: drop the client
  void answer_parked();
  StoreResponse apply(const StoreRequest& r);

  // Constant after construction.
  os::Fd listener_, wake_read_, wake_write_;
  int port_ = 0;
  std::shared_ptr<const Clock> clock_;  // the gate's
  // Owned by the serving thread.
  HandshakeGate gate_;  // connections until they have proven the job secret
  std::map<std::string, std::string> data_;
  std::vector<std::unique_ptr<Client>> clients_;
  std::thread thread_;
};

class StoreClient {
 public:
  // Connects (retrying until `timeout_seconds`: rank 0 may not have started the server yet) and
  // proves `secret` (none: no handshake); set and add fail after the same time. `who` ("rank
  // 3") and the address name this side in every error. Every bound is on `clock` (null: the
  // system's): the runtime's Env.
  static Result<std::unique_ptr<StoreClient>> connect(const Endpoint& server, double timeout_seconds,
                                                      std::string who, const JobSecret& secret = {},
                                                      std::shared_ptr<const Clock> clock = nullptr);
  Status set(const std::string& key, const std::string& value);
  // Waits until `key` exists, at most `timeout_seconds`.
  Result<std::string> get(const std::string& key, double timeout_seconds);
  Result<int64_t> add(const std::string& key, int64_t delta);
  // The value, or nullopt when the key does not exist (now: no waiting).
  Result<std::optional<std::string>> try_get(const std::string& key);
  // The clock its bounds run on (null: the system's); a caller that polls the store uses it too.
  const Clock* clock() const { return clock_.get(); }

 private:
  StoreClient(os::Fd fd, Endpoint server, std::string who, double timeout_seconds, std::shared_ptr<const Clock> clock)
      : fd_(std::move(fd)),
        server_(std::move(server)),
        who_(std::move(who)),
        timeout_seconds_(timeout_seconds),
        clock_(std::move(clock)) {}
  Result<std::string> call(const StoreRequest& r, double timeout_seconds);

  Mutex mu_;  // one request in flight at a time
  os::Fd fd_ KOROVOD_GUARDED_BY(mu_);
  std::string buffer_ KOROVOD_GUARDED_BY(mu_);
  Endpoint server_;
  std::string who_;
  double timeout_seconds_;
  std::shared_ptr<const Clock> clock_;
};

}  // namespace korovod::tcp
