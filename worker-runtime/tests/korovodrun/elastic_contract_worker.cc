// A worker of the elastic contract without the runtime (korovodrun_elastic.sh): it joins every
// round korovodrun publishes as the runtime's elastic init does (newest round, its assignment,
// "removed" = exit 1, then elastic/<r>/ready/<id> = "1"), prints its place, and "trains" by
// sleeping until a newer round appears (then joins it) or the file named by argv[1] exists
// (then exits 0).
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "transport/tcp/store.h"

namespace {

using korovod::tcp::StoreClient;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

int64_t counter(StoreClient& store, const std::string& key) {
  korovod::Result<std::optional<std::string>> v = store.try_get(key);
  return v.is_ok() && v->has_value() ? std::stoll(**v) : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || std::string(argv[1]) == "--help") {
    fmt::print("usage: elastic_contract_worker DONE_FILE (started by korovodrun in elastic mode)\n");
    return argc == 2 ? 0 : 2;
  }
  setvbuf(stdout, nullptr, _IOLBF, 0);  // a pipe to korovodrun: each line as printed
  const std::string id = env("KOROVOD_ELASTIC_WORKER_ID");
  korovod::Result<korovod::tcp::JobSecret> secret = korovod::tcp::JobSecret::from_text(env("KOROVOD_JOB_SECRET"), "KOROVOD_JOB_SECRET");
  if (id.empty() || !secret.is_ok()) {
    fmt::print(stderr, "not an elastic worker of korovodrun (KOROVOD_ELASTIC_WORKER_ID, KOROVOD_JOB_SECRET)\n");
    return 2;
  }
  korovod::Result<std::unique_ptr<StoreClient>> store = StoreClient::connect(
      {env("KOROVOD_RENDEZVOUS_ADDR"), std::atoi(env("KOROVOD_RENDEZVOUS_PORT").c_str())}, 30, id, *secret);
  if (!store.is_ok()) {
    fmt::print(stderr, "{}\n", store.status().message());
    return 3;
  }
  StoreClient& s = **store;
  int64_t joined = 0;
  for (;;) {
    const int64_t latest = counter(s, "elastic/round");
    if (latest > joined) {
      joined = latest;
      korovod::Result<std::string> place = s.get(fmt::format("elastic/{}/assign/{}", joined, id), 5);
      if (!place.is_ok() || *place == "removed") {
        fmt::print("worker {} pid {} removed in round {}\n", id, getpid(), joined);
        return 1;
      }
      if (!s.set(fmt::format("elastic/{}/ready/{}", joined, id), "1").is_ok()) return 4;
      fmt::print("worker {} pid {} round {} place {}\n", id, getpid(), joined, *place);
    }
    if (access(argv[1], F_OK) == 0) {
      fmt::print("worker {} done\n", id);
      return 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}
