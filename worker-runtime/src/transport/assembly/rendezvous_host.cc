// host_rendezvous (korovod/tcp.h): the store korovodrun hosts for the ranks it starts, for any
// process that starts ranks itself.
#include <fmt/format.h>

#include <cstdio>

#include "korovod/tcp.h"
#include "transport/tcp/auth.h"
#include "transport/tcp/store.h"

namespace korovod {
namespace {

class StoreHost final : public RendezvousHost {
 public:
  explicit StoreHost(std::unique_ptr<tcp::StoreServer> server) : server_(std::move(server)) {}
  int port() const override { return server_->port(); }

 private:
  std::unique_ptr<tcp::StoreServer> server_;
};

}  // namespace

Result<std::unique_ptr<RendezvousHost>> host_rendezvous(const std::string& listen_host, int port,
                                                        const std::string& job_secret,
                                                        std::function<void(const std::string&)> log) {
  if (port < 0 || port > 65535) return Status::invalid_argument(fmt::format("rendezvous port {} is not 0-65535", port));
  if (job_secret.empty()) {
    return Status::invalid_argument("the rendezvous needs a job secret: every rank proves it before the store answers");
  }
  Result<tcp::JobSecret> secret = tcp::JobSecret::from_text(job_secret, "the job_secret argument");
  if (!secret.is_ok()) return secret.status();
  if (!log) log = [](const std::string& line) { std::fprintf(stderr, "korovod: %s\n", line.c_str()); };
  Result<std::unique_ptr<tcp::StoreServer>> server =
      tcp::StoreServer::start(listen_host, port, std::move(secret).value(), std::move(log));
  if (!server.is_ok()) return server.status();
  return std::unique_ptr<RendezvousHost>(new StoreHost(std::move(server).value()));
}

}  // namespace korovod
