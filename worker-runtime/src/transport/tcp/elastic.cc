#include "transport/tcp/elastic.h"

#include <fmt/format.h>

#include <charconv>
#include <chrono>
#include <sstream>
#include <thread>

#include "transport/tcp/address.h"

namespace korovod::tcp {
namespace {

// How often a waiting worker looks at elastic/round: rounds change after failures and host
// changes, seconds apart, so 20 reads a second per worker cost the store nothing and add at most
// 50 ms to a reset.
constexpr std::chrono::milliseconds kRoundPoll{50};

std::string assign_key(int64_t round, const std::string& worker_id) {
  return fmt::format("elastic/{}/assign/{}", round, worker_id);
}

}  // namespace

Result<WorldInfo> parse_elastic_assignment(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  int v[6];
  for (int& x : v) {
    std::string word;
    in >> word;
    auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), x);
    if (word.empty() || ec != std::errc() || end != word.data() + word.size()) {
      return Status::invalid_argument(fmt::format(
          "{} = {:?}: expected \"rank size local_rank local_size cross_rank cross_size\"", key, text));
    }
  }
  std::string extra;
  WorldInfo w{v[0], v[1], v[2], v[3], v[4], v[5], true};
  if ((in >> extra) || w.size < 1 || w.rank < 0 || w.rank >= w.size || w.local_size < 1 || w.local_rank < 0 ||
      w.local_rank >= w.local_size || w.cross_size < 1 || w.cross_rank < 0 || w.cross_rank >= w.cross_size ||
      w.local_size > w.size || w.cross_size > w.size) {
    return Status::invalid_argument(fmt::format("{} = {:?}: out of range or trailing text", key, text));
  }
  return w;
}

Result<int64_t> read_counter(StoreClient& store, const std::string& key) {
  Result<std::optional<std::string>> text = store.try_get(key);
  if (!text.is_ok()) return text.status();
  if (!text->has_value()) return int64_t{0};
  const std::string& v = **text;
  int64_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size()) {
    return Status::invalid_argument(fmt::format("{} = {:?}: expected a decimal integer", key, v));
  }
  return n;
}

Result<ElasticRound> join_elastic_round(StoreClient& store, const std::string& worker_id, double timeout_seconds) {
  const std::string attempted_key = fmt::format("elastic/attempted/{}", worker_id);
  Result<int64_t> attempted = read_counter(store, attempted_key);
  if (!attempted.is_ok()) return attempted.status();
  const int64_t wanted = *attempted + 1;
  // On the store's clock (the runtime's Env); the pause between looks is real time.
  const Deadline deadline = Deadline::after(timeout_seconds, store.clock());
  int64_t unassigned = 0;  // newest round seen that does not name this worker yet
  for (;;) {
    Result<int64_t> published = read_counter(store, "elastic/round");
    if (!published.is_ok()) return published.status();
    if (*published >= wanted && *published > unassigned) {
      // Assignments are written before the round number, so a published round is complete.
      Result<std::optional<std::string>> found = store.try_get(assign_key(*published, worker_id));
      if (!found.is_ok()) return found.status();
      if (found->has_value()) {
        const std::string& text = **found;
        KOROVOD_RETURN_IF_ERROR(store.set(attempted_key, std::to_string(*published)));
        if (text == "removed") {
          return Status::precondition(fmt::format(
              "elastic: worker {} is not a member of round {} (the driver removed it)", worker_id, *published));
        }
        Result<WorldInfo> world = parse_elastic_assignment(text, assign_key(*published, worker_id));
        if (!world.is_ok()) return world.status();
        world->elastic_round = *published;
        return ElasticRound{*published, *world};
      }
      unassigned = *published;  // a worker the driver starts before the round that takes it in
    }
    if (deadline.passed()) {
      return Status::aborted(fmt::format(
          "elastic: worker {} waited {} s (KOROVOD_ELASTIC_TIMEOUT) for a round newer than {} that assigns it; the "
          "newest published round is {}",
          worker_id, timeout_seconds, wanted - 1, *published));
    }
    std::this_thread::sleep_for(kRoundPoll);
  }
}

Status mark_elastic_ready(StoreClient& store, int64_t round, const std::string& worker_id) {
  return store.set(fmt::format("elastic/{}/ready/{}", round, worker_id), "1");
}

Result<HostsVersion> read_hosts_version(StoreClient& store) {
  Result<int64_t> version = read_counter(store, "elastic/hosts_version");
  if (!version.is_ok()) return version.status();
  Result<int64_t> kind = read_counter(store, "elastic/hosts_kind");
  if (!kind.is_ok()) return kind.status();
  if (*version < 0 || *kind < 0 || *kind > 3) {
    return Status::invalid_argument(
        fmt::format("elastic/hosts_version = {}, elastic/hosts_kind = {}: out of range", *version, *kind));
  }
  return HostsVersion{static_cast<uint64_t>(*version), static_cast<uint32_t>(*kind)};
}

namespace {

Result<std::unique_ptr<StoreClient>> connect_store(const TcpWorldConfig& world) {
  JobSecret secret;
  if (!world.job_secret.empty()) {
    Result<JobSecret> s = JobSecret::from_text(world.job_secret, "the launcher");
    if (!s.is_ok()) return s.status();
    secret = std::move(s).value();
  }
  Result<std::string> addr = resolve_ipv4(world.rendezvous_addr);
  if (!addr.is_ok()) return Status::invalid_argument(fmt::format("rendezvous address: {}", addr.status().message()));
  return StoreClient::connect({*addr, world.rendezvous_port}, world.start_timeout_seconds,
                              fmt::format("elastic worker {}", world.elastic_worker_id), secret);
}

}  // namespace

Result<HostsVersion> read_hosts_version_at(const TcpWorldConfig& world) {
  Result<std::unique_ptr<StoreClient>> store = connect_store(world);
  if (!store.is_ok()) return store.status();
  return read_hosts_version(**store);
}

Result<int64_t> read_published_round_at(const TcpWorldConfig& world) {
  Result<std::unique_ptr<StoreClient>> store = connect_store(world);
  if (!store.is_ok()) return store.status();
  return read_counter(**store, "elastic/round");
}

}  // namespace korovod::tcp
