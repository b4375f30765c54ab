// korovod_elastic_driver_* (c_api.h): korovodrun's elastic driver (launch/elastic_driver.h) for a
// caller that starts the workers itself (korovod.spark.run_elastic, korovod.ray's elastic
// RayExecutor). The caller's callbacks are the driver's world; the job's store is reached over
// a client connection, as korovodrun's own driver reaches the store it hosts.
#include <fmt/format.h>

#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "capi/capi_internal.h"
#include "korovod/c_api.h"
#include "launch/discovery.h"
#include "launch/elastic_driver.h"
#include "transport/tcp/auth.h"
#include "transport/tcp/store.h"

namespace {

using korovod::Result;
using korovod::Status;
using korovod::launcher::ElasticWorld;
using korovod::launcher::HostSlots;
using korovod::launcher::WorkerSlot;

constexpr int kDiscoveryBytes = 1 << 16;

class CallbackWorld final : public ElasticWorld {
 public:
  CallbackWorld(const korovod_elastic_world& callbacks, std::unique_ptr<korovod::tcp::StoreClient> store)
      : cb_(callbacks), store_(std::move(store)) {}

  Clock::time_point now() override { return Clock::now(); }

  Result<std::vector<HostSlots>> discover() override {
    std::vector<char> buf(kDiscoveryBytes, '\0');
    const int code = cb_.discover(cb_.context, buf.data(), static_cast<int>(buf.size()));
    buf.back() = '\0';
    const std::string text(buf.data());
    if (code != 0) return Status::unknown(fmt::format("host discovery failed: {}", text.empty() ? "(no reason given)" : text));
    return korovod::launcher::parse_discovery_output(text, 1);
  }
  Status set_key(const std::string& key, const std::string& value) override { return store_->set(key, value); }
  Result<int64_t> add_to_key(const std::string& key, int64_t delta) override { return store_->add(key, delta); }
  Result<std::optional<std::string>> read_key(const std::string& key) override { return store_->try_get(key); }

  Status start_worker(const WorkerSlot& w) override {
    char why[1024] = {0};
    const int code = cb_.start_worker(cb_.context, w.host.c_str(), w.slot, why, sizeof why);
    why[sizeof why - 1] = '\0';
    if (code == 0) return Status::ok();
    return Status::unknown(fmt::format("could not start: {}", why[0] ? why : "(no reason given)"));
  }
  void stop_worker(const WorkerSlot& w) override { cb_.stop_worker(cb_.context, w.host.c_str(), w.slot); }
  void say(const std::string& line) override { cb_.say(cb_.context, line.c_str()); }

 private:
  korovod_elastic_world cb_;
  std::unique_ptr<korovod::tcp::StoreClient> store_;
};

Status check_options(const korovod_elastic_options& o) {
  if (o.min_np < 1) return Status::invalid_argument(fmt::format("min_np must be at least 1, not {}", o.min_np));
  if (o.start_np < o.min_np) {
    return Status::invalid_argument(fmt::format("start_np ({}) must be at least min_np ({})", o.start_np, o.min_np));
  }
  if (o.max_np != 0 && o.max_np < o.start_np) {
    return Status::invalid_argument(fmt::format("max_np ({}) must be at least start_np ({})", o.max_np, o.start_np));
  }
  if (o.reset_limit < -1) return Status::invalid_argument(fmt::format("reset_limit must be -1 (none) or >= 0, not {}", o.reset_limit));
  if (o.blacklist_after_failures < 1) {
    return Status::invalid_argument(fmt::format("blacklist_after_failures must be at least 1, not {}", o.blacklist_after_failures));
  }
  if (!(o.elastic_timeout_seconds > 0)) return Status::invalid_argument("elastic_timeout_seconds must be above 0");
  if (!(o.discovery_interval_seconds > 0)) return Status::invalid_argument("discovery_interval_seconds must be above 0");
  if (o.cooldown_min_seconds != 0 || o.cooldown_max_seconds != 0) {
    return korovod::launcher::check_cooldown_range({o.cooldown_min_seconds, o.cooldown_max_seconds});
  }
  return Status::ok();
}

std::chrono::milliseconds millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0 + 0.5));
}

}  // namespace

struct korovod_elastic_driver {
  std::unique_ptr<CallbackWorld> world;
  std::mt19937_64 random{std::random_device{}()};
  std::unique_ptr<korovod::launcher::ElasticDriver> driver;
};

using korovod::capi::code_of;
using korovod::capi::copy_text;

extern "C" {

int korovod_elastic_driver_new(korovod_elastic_driver** out, const korovod_elastic_options* options,
                               const korovod_elastic_world* world, const char* store_address, int store_port,
                               const char* job_secret, char* error_text, int error_len) {
  auto fail = [&](const Status& s) {
    copy_text(s.message(), error_text, error_len);
    return code_of(s);
  };
  if (out) *out = nullptr;
  if (!out || !options || !world || !store_address || !job_secret) {
    return fail(Status::invalid_argument(
        "korovod_elastic_driver_new: out, options, world, store_address and job_secret must not be NULL"));
  }
  if (!world->discover || !world->start_worker || !world->stop_worker || !world->say) {
    return fail(Status::invalid_argument("korovod_elastic_driver_new: every callback of world must be set"));
  }
  if (Status s = check_options(*options); !s.is_ok()) return fail(s);
  Result<korovod::tcp::JobSecret> secret = korovod::tcp::JobSecret::from_text(job_secret, "the job_secret argument");
  if (!secret.is_ok()) return fail(secret.status());
  Result<std::unique_ptr<korovod::tcp::StoreClient>> store = korovod::tcp::StoreClient::connect(
      {store_address, store_port}, 30.0, "the elastic driver", std::move(secret).value());
  if (!store.is_ok()) return fail(store.status());

  auto* d = new korovod_elastic_driver;
  d->world = std::make_unique<CallbackWorld>(*world, std::move(store).value());
  korovod::launcher::ElasticOptions o;
  o.start_np = options->start_np;
  o.min_np = options->min_np;
  if (options->max_np > 0) o.max_np = options->max_np;
  o.elastic_timeout = millis(options->elastic_timeout_seconds);
  if (options->reset_limit >= 0) o.reset_limit = options->reset_limit;
  o.discovery_interval = millis(options->discovery_interval_seconds);
  o.verbose = options->verbose != 0;
  if (options->elastic_timeout_name) o.names.elastic_timeout = options->elastic_timeout_name;
  if (options->start_np_name) o.names.start_np = options->start_np_name;
  if (options->min_np_name) o.names.min_np = options->min_np_name;
  if (options->reset_limit_name) o.names.reset_limit = options->reset_limit_name;
  std::optional<korovod::launcher::CooldownRange> cooldown;
  if (options->cooldown_min_seconds != 0 || options->cooldown_max_seconds != 0) {
    cooldown = korovod::launcher::CooldownRange{options->cooldown_min_seconds, options->cooldown_max_seconds};
  }
  korovod::launcher::HostBlacklist blacklist(options->blacklist_after_failures, cooldown, [d] {
    return std::uniform_real_distribution<double>(0.0, 1.0)(d->random);
  });
  d->driver = std::make_unique<korovod::launcher::ElasticDriver>(o, std::move(blacklist), *d->world);
  *out = d;
  copy_text("", error_text, error_len);
  return KOROVOD_OK;
}

double korovod_elastic_driver_tick(korovod_elastic_driver* d) {
  if (!d) return 0.0;
  if (!d->driver->outcome()) d->driver->tick();
  const auto until = d->driver->next_wakeup() - korovod::launcher::ElasticWorld::Clock::now();
  const double seconds = std::chrono::duration<double>(until).count();
  return seconds > 0 ? seconds : 0.0;
}

void korovod_elastic_driver_worker_exited(korovod_elastic_driver* d, const char* host, int slot, int exit_code) {
  if (!d || !host) return;
  d->driver->on_worker_exit(WorkerSlot{host, slot}, exit_code);
}

int korovod_elastic_driver_outcome(const korovod_elastic_driver* d, int* exit_code, char* message, int len) {
  if (!d) return -1;
  const auto& outcome = d->driver->outcome();
  if (!outcome) return 0;
  if (exit_code) *exit_code = outcome->exit_code;
  copy_text(outcome->message, message, len);
  return 1;
}

int korovod_elastic_driver_round(const korovod_elastic_driver* d) { return d ? d->driver->round() : -1; }

int korovod_elastic_driver_rank_of(const korovod_elastic_driver* d, const char* host, int slot) {
  if (!d || !host) return -1;
  for (const korovod::launcher::RoundMember& m : d->driver->members()) {
    if (m.worker.host == host && m.worker.slot == slot) return m.place.rank;
  }
  return -1;
}

void korovod_elastic_driver_free(korovod_elastic_driver* d) { delete d; }

}  // extern "C"
