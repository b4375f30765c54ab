// korovod_elastic_driver_* (c_api.h) against a store hosted by korovod_rendezvous_start and a
// world of C callbacks that only record: the options' errors name the field; a round goes
// through the callbacks and the store; the job ends when the workers exit; the messages name the
// caller's limits. The driver's logic itself: tools/korovodrun/elastic_driver_test.cc.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "korovod/c_api.h"
#include "transport/tcp/auth.h"
#include "transport/tcp/store.h"

namespace {

constexpr const char* kSecret = "0123456789abcdef0123456789abcdef";

struct Recorder {
  std::string hosts = "h:2\n";
  std::vector<std::string> started, stopped, said;
};

int discover(void* context, char* buf, int len) {
  auto* r = static_cast<Recorder*>(context);
  std::snprintf(buf, static_cast<size_t>(len), "%s", r->hosts.c_str());
  return 0;
}
int start_worker(void* context, const char* host, int slot, char*, int) {
  static_cast<Recorder*>(context)->started.push_back(std::string(host) + ":" + std::to_string(slot));
  return 0;
}
void stop_worker(void* context, const char* host, int slot) {
  static_cast<Recorder*>(context)->stopped.push_back(std::string(host) + ":" + std::to_string(slot));
}
void say(void* context, const char* line) { static_cast<Recorder*>(context)->said.emplace_back(line); }

korovod_elastic_options options(int np) {
  korovod_elastic_options o{};
  o.start_np = o.min_np = o.max_np = np;
  o.reset_limit = -1;
  o.blacklist_after_failures = 3;
  o.elastic_timeout_seconds = 30;
  o.discovery_interval_seconds = 0.05;
  return o;
}

class CApiElasticDriver : public ::testing::Test {
 protected:
  void SetUp() override {
    char why[512];
    ASSERT_EQ(korovod_rendezvous_start(&store_, "127.0.0.1", 0, kSecret, why, sizeof why), KOROVOD_OK) << why;
    world_ = {&recorder_, discover, start_worker, stop_worker, say};
  }
  void TearDown() override { korovod_rendezvous_stop(store_); }

  int make(const korovod_elastic_options& o, korovod_elastic_driver** d, std::string& why) {
    char text[512] = "x";
    const int code = korovod_elastic_driver_new(d, &o, &world_, "127.0.0.1", korovod_rendezvous_port(store_), kSecret,
                                                text, sizeof text);
    why = text;
    return code;
  }
  std::string all_said() const {
    std::string s;
    for (const std::string& l : recorder_.said) s += l + "\n";
    return s;
  }

  Recorder recorder_;
  korovod_rendezvous* store_ = nullptr;
  korovod_elastic_world world_{};
};

TEST_F(CApiElasticDriver, BadOptionsAndArgumentsNameWhatIsWrong) {
  korovod_elastic_driver* d = reinterpret_cast<korovod_elastic_driver*>(1);
  std::string why;
  korovod_elastic_options o = options(2);
  o.min_np = 0;
  EXPECT_EQ(make(o, &d, why), KOROVOD_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(d, nullptr);
  EXPECT_NE(why.find("min_np must be at least 1"), std::string::npos) << why;
  o = options(2);
  o.max_np = 1;
  EXPECT_EQ(make(o, &d, why), KOROVOD_ERR_INVALID_ARGUMENT);
  EXPECT_NE(why.find("max_np (1) must be at least start_np (2)"), std::string::npos) << why;
  o = options(2);
  o.cooldown_min_seconds = 0;
  o.cooldown_max_seconds = 10;
  EXPECT_EQ(make(o, &d, why), KOROVOD_ERR_INVALID_ARGUMENT) << why;
  o = options(2);
  world_.say = nullptr;
  EXPECT_EQ(make(o, &d, why), KOROVOD_ERR_INVALID_ARGUMENT);
  EXPECT_NE(why.find("every callback"), std::string::npos) << why;
  world_.say = say;
  char text[256];
  EXPECT_EQ(korovod_elastic_driver_new(&d, &o, &world_, "127.0.0.1", korovod_rendezvous_port(store_), "short", text,
                                       sizeof text),
            KOROVOD_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(korovod_elastic_driver_outcome(nullptr, nullptr, nullptr, 0), -1);
  korovod_elastic_driver_free(nullptr);
}

TEST_F(CApiElasticDriver, ARoundGoesThroughTheCallbacksAndTheStoreAndEndsWhenTheWorkersReturn) {
  korovod_elastic_driver* d = nullptr;
  std::string why;
  ASSERT_EQ(make(options(2), &d, why), KOROVOD_OK) << why;
  EXPECT_GE(korovod_elastic_driver_tick(d), 0.0);
  ASSERT_EQ(korovod_elastic_driver_round(d), 1) << all_said();
  EXPECT_EQ(recorder_.started, (std::vector<std::string>{"h:0", "h:1"}));
  EXPECT_EQ(korovod_elastic_driver_rank_of(d, "h", 1), 1);
  EXPECT_EQ(korovod_elastic_driver_rank_of(d, "h", 7), -1);

  // What the workers' hvd.init() does: read their assignment, say they are ready.
  korovod::Result<korovod::tcp::JobSecret> secret = korovod::tcp::JobSecret::from_text(kSecret, "test");
  ASSERT_TRUE(secret.is_ok());
  auto client = korovod::tcp::StoreClient::connect({"127.0.0.1", korovod_rendezvous_port(store_)}, 10, "test", *secret);
  ASSERT_TRUE(client.is_ok()) << client.status().message();
  korovod::Result<std::string> assigned = (*client)->get("elastic/1/assign/h:1", 5);
  ASSERT_TRUE(assigned.is_ok());
  EXPECT_EQ(*assigned, "1 2 1 2 0 1");  // rank size local_rank local_size cross_rank cross_size
  for (const char* id : {"h:0", "h:1"}) ASSERT_TRUE((*client)->set(std::string("elastic/1/ready/") + id, "1").is_ok());
  for (int i = 0; i < 100 && all_said().find("round 1 formed") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    korovod_elastic_driver_tick(d);
  }
  EXPECT_NE(all_said().find("round 1 formed: 2 workers"), std::string::npos) << all_said();

  int code = -1;
  char message[256];
  korovod_elastic_driver_worker_exited(d, "h", 0, 0);
  korovod_elastic_driver_tick(d);
  EXPECT_EQ(korovod_elastic_driver_outcome(d, &code, message, sizeof message), 0);
  korovod_elastic_driver_worker_exited(d, "h", 1, 0);
  korovod_elastic_driver_tick(d);
  ASSERT_EQ(korovod_elastic_driver_outcome(d, &code, message, sizeof message), 1);
  EXPECT_EQ(code, 0);
  EXPECT_STREQ(message, "");
  korovod_elastic_driver_free(d);
}

TEST_F(CApiElasticDriver, TooFewSlotsFailNamingTheCallersLimits) {
  recorder_.hosts = "h:1\n";
  korovod_elastic_options o = options(2);
  o.elastic_timeout_seconds = 0.2;
  o.elastic_timeout_name = "elastic_timeout";
  o.start_np_name = "num_proc";
  korovod_elastic_driver* d = nullptr;
  std::string why;
  ASSERT_EQ(make(o, &d, why), KOROVOD_OK) << why;
  int code = 0;
  char message[512] = "";
  for (int i = 0; i < 200 && korovod_elastic_driver_outcome(d, &code, message, sizeof message) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    korovod_elastic_driver_tick(d);
  }
  ASSERT_EQ(korovod_elastic_driver_outcome(d, &code, message, sizeof message), 1) << all_said();
  EXPECT_NE(code, 0);
  EXPECT_NE(std::string(message).find("timed out after elastic_timeout"), std::string::npos) << message;
  EXPECT_NE(std::string(message).find("waiting for 2 worker slots to start (num_proc): 1 available"), std::string::npos)
      << message;
  EXPECT_TRUE(recorder_.started.empty());
  korovod_elastic_driver_free(d);
}

}  // namespace
