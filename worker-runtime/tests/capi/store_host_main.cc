// rt_store_host: a rendezvous store hosted outside the ranks, as korovodrun hosts it
// (KOROVOD_RENDEZVOUS_SERVER=external), for the tests that start ranks against it.
#include <fmt/format.h>
#include <signal.h>

#include <cstring>
#include <string>

#include "transport/tcp/store.h"

int main(int argc, char** argv) {
  if (argc > 1 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    fmt::print(
        "usage: rt_store_host\n\nServes a korovod rendezvous store on 127.0.0.1, an ephemeral port, until SIGTERM or "
        "SIGINT;\nprints the port on the first line of stdout.\n");
    return 0;
  }
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);  // before the server's thread starts: it inherits the mask
  auto server = korovod::tcp::StoreServer::start("127.0.0.1", 0);
  if (!server.is_ok()) {
    fmt::print(stderr, "rt_store_host: {}\n", server.status().to_string());
    return 1;
  }
  fmt::print("{}\n", (*server)->port());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  return 0;
}
