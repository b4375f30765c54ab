// The C ABI (korovod/c_api.h) without MPI or a launcher, part 3: many operations and handles per
// call -- korovod_enqueue_many, korovod_wait_all, korovod_release_many -- their results, and the
// errors that name the bad argument or the tensor and its index (rt_capi_test).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "capi/testing/capi_test_util.h"
#include "core/testing/fake_env.h"
#include "korovod/tcp.h"
#include "transport/tcp/auth.h"

namespace korovod::capi_test {
namespace {

std::string last_error(korovod_runtime* rt) { return korovod_last_error(rt); }

#define EXPECT_TEXT(rt, text) \
  EXPECT_NE(last_error(rt).find(text), std::string::npos) << "wanted '" << (text) << "' in: " << last_error(rt)

// A ready event whose poll fails: the op it holds fails (and, as a device failure, stops the engine).
struct FailingEvent final : korovod::ReadyEvent {
  korovod::Result<bool> ready() const override { return korovod::Status::unknown("the device is gone"); }
};

// One korovod_enqueue_many call, as Op is one korovod_enqueue: the optional arrays NULL unless
// set (devices always: CPU).
struct Many {
  int type = KOROVOD_OP_ALLREDUCE;
  int count = 0;
  const char* const* names = nullptr;
  void* const* inputs = nullptr;
  void* const* outputs = nullptr;
  const int32_t* dtypes = nullptr;
  const int32_t* ndims = nullptr;
  const int64_t* const* shapes = nullptr;
  const int32_t* ops = nullptr;
  const double* prescales = nullptr;
  const double* postscales = nullptr;
  int process_set = 0;
  korovod_event* const* ready = nullptr;
  int64_t* handles = nullptr;

  int enqueue(korovod_runtime* rt) const {
    return korovod_enqueue_many(rt, type, count, names, inputs, outputs, dtypes, ndims, shapes, nullptr, ops, prescales,
                                postscales, process_set, ready, handles);
  }
};

// Two float32 tensors x and y of n elements, and the allreduce of both in one call (many()):
// named when names are given, else with names NULL.
struct TwoTensors {
  TwoTensors(int64_t n, float x0, float y0, const char* x_name = nullptr, const char* y_name = nullptr)
      : x(n, x0), y(n, y0), shape{n}, names{x_name, y_name} {}
  TwoTensors(const TwoTensors&) = delete;  // many() points into it

  Many many(korovod_event* const* ready = nullptr) {
    return {.count = 2, .names = names[0] ? names : nullptr, .inputs = inputs, .dtypes = dtypes, .ndims = ndims,
            .shapes = shapes, .ready = ready, .handles = handles};
  }

  std::vector<float> x, y;
  const int64_t shape[1];
  const char* const names[2];
  void* inputs[2] = {x.data(), y.data()};
  const int32_t dtypes[2] = {KOROVOD_FLOAT32, KOROVOD_FLOAT32};
  const int32_t ndims[2] = {1, 1};
  const int64_t* shapes[2] = {shape, shape};
  int64_t handles[2] = {};
};

TEST_F(CApi, EnqueueManyQueuesEachOpWithItsOwnNameOpAndScales) {
  std::vector<float> a = {1.f, 2.f}, a_out(2, -1.f);
  std::vector<double> b = {0.5, -1.5, 4.0};
  std::vector<int32_t> c = {7};
  const int64_t a_shape[] = {2}, b_shape[] = {3}, c_shape[] = {1, 1};
  const char* names[] = {"many.a", nullptr, "many.c"};
  void* inputs[] = {a.data(), b.data(), c.data()};
  void* outputs[] = {a_out.data(), nullptr, nullptr};  // a: out of place; b, c: in place
  const int32_t dtypes[] = {KOROVOD_FLOAT32, KOROVOD_FLOAT64, KOROVOD_INT32};
  const int32_t ndims[] = {1, 1, 2};
  const int64_t* shapes[] = {a_shape, b_shape, c_shape};
  const int32_t ops[] = {KOROVOD_SUM, KOROVOD_AVERAGE, KOROVOD_MAX};
  const double prescales[] = {1.0, 2.0, 1.0}, postscales[] = {1.0, 3.0, 1.0};
  int64_t handles[3] = {};
  const Many three{.count = 3, .names = names, .inputs = inputs, .outputs = outputs, .dtypes = dtypes,
                   .ndims = ndims, .shapes = shapes, .ops = ops, .prescales = prescales, .postscales = postscales,
                   .handles = handles};
  ASSERT_EQ(three.enqueue(rt_), 3) << last_error(rt_);
  for (int64_t h : handles) EXPECT_GT(h, 0);
  EXPECT_NE(handles[0], handles[1]);
  int32_t statuses[3] = {-9, -9, -9};
  ASSERT_EQ(korovod_wait_all(rt_, handles, 3, -1.0, statuses), KOROVOD_OK) << last_error(rt_);
  EXPECT_EQ(statuses[0], KOROVOD_OK);
  EXPECT_EQ(statuses[1], KOROVOD_OK);
  EXPECT_EQ(statuses[2], KOROVOD_OK);
  EXPECT_EQ(a_out, (std::vector<float>{1.f, 2.f}));
  EXPECT_EQ(a, (std::vector<float>{1.f, 2.f}));  // out of place: the input is untouched
  EXPECT_EQ(b, (std::vector<double>{3.0, -9.0, 24.0}));  // one rank: x * 2 * 3
  EXPECT_EQ(c, (std::vector<int32_t>{7}));
  korovod_release_many(rt_, handles, 3);
  for (int64_t h : handles) EXPECT_EQ(korovod_poll(rt_, h), KOROVOD_ERR_INVALID_ARGUMENT) << "handle " << h;

  // Optional arrays left NULL: Average, scale 1, in place, no names, CPU; and an empty batch.
  std::vector<float> d = {5.f, 6.f};
  void* d_inputs[] = {d.data()};
  const int32_t d_dtypes[] = {KOROVOD_FLOAT32}, d_ndims[] = {1};
  const int64_t* d_shapes[] = {a_shape};
  int64_t h = 0;
  const Many one{
      .count = 1, .inputs = d_inputs, .dtypes = d_dtypes, .ndims = d_ndims, .shapes = d_shapes, .handles = &h};
  ASSERT_EQ(one.enqueue(rt_), 1) << last_error(rt_);
  ASSERT_EQ(korovod_wait_all(rt_, &h, 1, 10.0, nullptr), KOROVOD_OK);
  EXPECT_EQ(d, (std::vector<float>{5.f, 6.f}));
  korovod_release_many(rt_, &h, 1);
  EXPECT_EQ(Many{}.enqueue(rt_), 0);
  EXPECT_EQ(korovod_wait_all(rt_, nullptr, 0, -1.0, nullptr), KOROVOD_OK);
  korovod_release_many(rt_, nullptr, 3);  // ignored
}

TEST_F(CApi, EnqueueManyAllgatherOutputsAreTheRuntimes) {
  std::vector<int64_t> x = {1, 2, 3, 4};
  std::vector<float> y = {9.f};
  const int64_t x_shape[] = {2, 2}, y_shape[] = {1};
  const char* names[] = {"many.gx", "many.gy"};
  void* inputs[] = {x.data(), y.data()};
  const int32_t dtypes[] = {KOROVOD_INT64, KOROVOD_FLOAT32}, ndims[] = {2, 1};
  const int64_t* shapes[] = {x_shape, y_shape};
  int64_t handles[2] = {};
  const Many gather{.type = KOROVOD_OP_ALLGATHER, .count = 2, .names = names, .inputs = inputs, .dtypes = dtypes,
                    .ndims = ndims, .shapes = shapes, .handles = handles};
  ASSERT_EQ(gather.enqueue(rt_), 2) << last_error(rt_);
  ASSERT_EQ(korovod_wait_all(rt_, handles, 2, -1.0, nullptr), KOROVOD_OK) << last_error(rt_);
  void* data = nullptr;
  int ndim = 0;
  int64_t shape[2] = {};
  ASSERT_EQ(korovod_handle_output(rt_, handles[0], &data, &ndim, shape, 2), KOROVOD_OK) << last_error(rt_);
  EXPECT_EQ(ndim, 2);
  EXPECT_EQ(shape[0], 2);
  EXPECT_EQ(std::vector<int64_t>(static_cast<int64_t*>(data), static_cast<int64_t*>(data) + 4), x);
  ASSERT_EQ(korovod_handle_output(rt_, handles[1], &data, &ndim, shape, 2), KOROVOD_OK) << last_error(rt_);
  EXPECT_EQ(*static_cast<float*>(data), 9.f);
  korovod_release_many(rt_, handles, 2);
}

TEST_F(CApi, EnqueueManyNamesTheBadArgument) {
  TwoTensors t(4, 1.f, 1.f, "bad.x", "bad.y");
  const int32_t bad_op[] = {KOROVOD_SUM, 17};
  const int64_t* null_shape[] = {t.shape, nullptr};
  // Each call differs from t.many() in one argument; the error names it (or the op, by index
  // and tensor name), and nothing is queued: every handle is 0.
  const struct {
    const char* error;
    std::function<void(Many&)> change;
  } cases[] = {
      {"korovod_enqueue_many: count -1 is negative", [](Many& m) { m.count = -1; }},
      {"type 2 is not allreduce, allgather or reducescatter", [](Many& m) { m.type = KOROVOD_OP_BROADCAST; }},
      {"korovod_enqueue_many: inputs is NULL", [](Many& m) { m.inputs = nullptr; }},
      {"dtypes is NULL", [](Many& m) { m.dtypes = nullptr; }},
      {"ndims is NULL", [](Many& m) { m.ndims = nullptr; }},
      {"shapes is NULL", [](Many& m) { m.shapes = nullptr; }},
      {"handles_out is NULL", [](Many& m) { m.handles = nullptr; }},
      {"ALLGATHER allocates its outputs; pass outputs NULL",
       [&t](Many& m) {
         m.type = KOROVOD_OP_ALLGATHER;
         m.outputs = t.inputs;
       }},
      {"korovod_enqueue_many: op 1 of 2: tensor 'bad.y': unknown reduce op 17", [&](Many& m) { m.ops = bad_op; }},
      {"op 1 of 2: tensor 'bad.y': ndim 1 with shape NULL", [&](Many& m) { m.shapes = null_shape; }},
      // The whole call's process set is unknown: the runtime refuses the first op.
      {"unknown process set 5", [](Many& m) { m.process_set = 5; }},
  };
  for (const auto& c : cases) {
    Many m = t.many();
    c.change(m);
    t.handles[0] = t.handles[1] = 7;
    EXPECT_EQ(m.enqueue(rt_), KOROVOD_ERR_INVALID_ARGUMENT) << c.error;
    EXPECT_TEXT(rt_, c.error);
    if (m.handles && m.count > 0) {
      EXPECT_EQ(t.handles[0], 0) << c.error;
      EXPECT_EQ(t.handles[1], 0) << c.error;
    }
  }

  // The runtime refuses op 1 (its dtype): op 0 stays queued, with its handle; op 1 has none.
  const int32_t bad_dtype[] = {KOROVOD_FLOAT32, 42};
  Many m = t.many();
  m.dtypes = bad_dtype;
  EXPECT_EQ(m.enqueue(rt_), KOROVOD_ERR_INVALID_ARGUMENT);
  EXPECT_TEXT(rt_, "tensor 'bad.y': invalid input dtype");
  ASSERT_GT(t.handles[0], 0);
  EXPECT_EQ(t.handles[1], 0);
  done(t.handles[0]);
  korovod_release(rt_, t.handles[0]);

  int64_t h = 0;
  m = t.many();
  m.count = 1;
  m.handles = &h;
  EXPECT_EQ(m.enqueue(nullptr), KOROVOD_ERR_NOT_INITIALIZED);
  // The runtime is still usable after all of these.
  ASSERT_EQ(t.many().enqueue(rt_), 2);
  EXPECT_EQ(korovod_wait_all(rt_, t.handles, 2, -1.0, nullptr), KOROVOD_OK);
  korovod_release_many(rt_, t.handles, 2);
}

TEST_F(CApi, EnqueueManyConsumesEveryReadyEvent) {
  std::atomic<bool> ready{true};
  std::atomic<int> destroyed{0};
  TwoTensors t(2, 1.f, 1.f);
  const int32_t bad_ops[] = {KOROVOD_SUM, 99};
  korovod_event* events[] = {test_event(&ready, &destroyed), test_event(&ready, &destroyed)};
  Many bad = t.many(events);
  bad.ops = bad_ops;
  EXPECT_EQ(bad.enqueue(rt_), KOROVOD_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(destroyed.load(), 2);
  korovod_event* more[] = {test_event(&ready, &destroyed), test_event(&ready, &destroyed)};
  EXPECT_EQ(t.many(more).enqueue(nullptr), KOROVOD_ERR_NOT_INITIALIZED);
  EXPECT_EQ(destroyed.load(), 4);
  korovod_event* good[] = {test_event(&ready, &destroyed), test_event(&ready, &destroyed)};
  ASSERT_EQ(t.many(good).enqueue(rt_), 2);
  ASSERT_EQ(korovod_wait_all(rt_, t.handles, 2, -1.0, nullptr), KOROVOD_OK);
  korovod_release_many(rt_, t.handles, 2);
  EXPECT_EQ(destroyed.load(), 6);
}

TEST_F(CApi, WaitAllTimesOutThenReportsEachOutcome) {
  std::atomic<bool> ready{false};
  std::atomic<int> destroyed{0};
  TwoTensors t(2, 1.f, 2.f, "wait.free", "wait.held");
  korovod_event* events[] = {nullptr, test_event(&ready, &destroyed)};
  ASSERT_EQ(t.many(events).enqueue(rt_), 2) << last_error(rt_);
  int64_t* handles = t.handles;
  int32_t statuses[2] = {-9, -9};
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(korovod_wait_all(rt_, handles, 2, 0.2, statuses), KOROVOD_ERR_IN_PROGRESS);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 2.0);
  EXPECT_EQ(statuses[1], KOROVOD_ERR_IN_PROGRESS);
  ready = true;
  ASSERT_EQ(korovod_wait_all(rt_, handles, 2, 10.0, statuses), KOROVOD_OK) << last_error(rt_);
  EXPECT_EQ(statuses[0], KOROVOD_OK);
  EXPECT_EQ(statuses[1], KOROVOD_OK);
  korovod_release_many(rt_, handles, 2);
  EXPECT_EQ(destroyed.load(), 1);

  // Bad arguments and unknown handles.
  EXPECT_EQ(korovod_wait_all(rt_, handles, -2, 1.0, nullptr), KOROVOD_ERR_INVALID_ARGUMENT);
  EXPECT_TEXT(rt_, "korovod_wait_all: count -2 with handles set");
  EXPECT_EQ(korovod_wait_all(rt_, nullptr, 2, 1.0, nullptr), KOROVOD_ERR_INVALID_ARGUMENT);
  EXPECT_TEXT(rt_, "korovod_wait_all: count 2 with handles NULL");
  const int64_t unknown[] = {123456, 654321};
  EXPECT_EQ(korovod_wait_all(rt_, unknown, 2, 1.0, statuses), KOROVOD_ERR_INVALID_ARGUMENT);
  EXPECT_TEXT(rt_, "unknown handle 123456");  // the first in order
  EXPECT_EQ(statuses[1], KOROVOD_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(korovod_wait_all(nullptr, unknown, 2, 1.0, statuses), KOROVOD_ERR_NOT_INITIALIZED);
}

// korovod_wait_all's one bound for all handles runs on the runtime's Env: on a fake one, a 30 s
// bound over two held handles ends at 30 s of the Env's time, not 0.1 s before nor a second
// bound later for the second handle, and takes no real 30 s.
TEST(CApiOnAFakeEnv, WaitAllEndsAtItsBoundInTheRuntimesTime) {
  auto env = std::make_shared<korovod::testing::FakeEnv>();
  korovod::Config config;
  config.log_level = korovod::LogLevel::kError;
  config.collective_timeout_seconds = 0;  // no watchdog, no ready-event bound: only wait_all's
  config.tcp_iface = "lo";
  korovod::TcpWorldConfig world;  // one rank on loopback, as a job started without a launcher
  world.rendezvous_addr = world.server_listen_host = "127.0.0.1";
  world.rank = 0;
  world.size = 1;
  world.start_timeout_seconds = 10;
  world.job_secret = korovod::tcp::JobSecret::generate().text();
  korovod::Result<korovod::RuntimeOptions> options = korovod::tcp_runtime_options(config, world, {}, env);
  ASSERT_TRUE(options.is_ok()) << options.status().to_string();
  korovod::Result<std::unique_ptr<korovod::Runtime>> runtime = korovod::Runtime::create(std::move(options).value());
  ASSERT_TRUE(runtime.is_ok()) << runtime.status().to_string();
  korovod_runtime* rt = korovod::capi::wrap(std::move(runtime).value());

  std::atomic<bool> ready{false};
  std::atomic<int> destroyed{0};
  float x[2] = {1.f, 2.f};
  int64_t h[2];
  for (int i = 0; i < 2; ++i) {
    Op op;
    op.name = i == 0 ? "held.a" : "held.b";
    op.input = op.output = &x[i];
    op.shape = {1};
    op.ready = test_event(&ready, &destroyed);
    h[i] = op.enqueue(rt);
    ASSERT_GT(h[i], 0) << last_error(rt);
  }

  const auto real_start = std::chrono::steady_clock::now();
  const auto fake_start = env->now();
  std::atomic<bool> started{false}, returned{false};
  int code = -1;
  int32_t statuses[2] = {-9, -9};
  korovod::Env::TimePoint fake_end{};
  std::thread waiter([&] {
    started = true;
    code = korovod_wait_all(rt, h, 2, 30.0, statuses);
    fake_end = env->now();
    returned = true;
  });
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // its deadline is taken
  env->advance(std::chrono::milliseconds(29'900));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(returned.load()) << "returned before its bound, at +29.9 s of the Env's time";
  env->advance(std::chrono::milliseconds(200));
  for (int i = 0; i < 5000 && !returned; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(returned.load()) << "still waiting at +30.1 s of the Env's time";
  waiter.join();
  EXPECT_EQ(code, KOROVOD_ERR_IN_PROGRESS);
  EXPECT_EQ(statuses[0], KOROVOD_ERR_IN_PROGRESS);
  EXPECT_EQ(statuses[1], KOROVOD_ERR_IN_PROGRESS);
  EXPECT_GE(fake_end - fake_start, std::chrono::seconds(30));
  EXPECT_LT(std::chrono::steady_clock::now() - real_start, std::chrono::seconds(10));

  // Once ready it completes; the Env's time moves so that the waits on it (ready-event polls)
  // come round.
  ready = true;
  std::atomic<bool> done{false};
  std::thread ticker([&] {
    while (!done) {
      env->advance(std::chrono::milliseconds(1));
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  EXPECT_EQ(korovod_wait_all(rt, h, 2, 60.0, nullptr), KOROVOD_OK) << last_error(rt);
  EXPECT_EQ(x[0], 1.f);
  EXPECT_EQ(x[1], 2.f);
  korovod_release_many(rt, h, 2);
  korovod_destroy(rt);
  done = true;
  ticker.join();
  EXPECT_EQ(destroyed.load(), 2);
}

TEST_F(CApi, WaitAllWaitsPastAFailureAndReportsIt) {
  TwoTensors t(2, 1.f, 2.f, "fails.first", "fails.second");
  korovod_event* events[] = {new korovod_event{std::make_shared<FailingEvent>()}, nullptr};
  ASSERT_EQ(t.many(events).enqueue(rt_), 2) << last_error(rt_);
  int64_t* handles = t.handles;
  int32_t statuses[2] = {-9, -9};
  const int code = korovod_wait_all(rt_, handles, 2, 30.0, statuses);
  EXPECT_EQ(code, KOROVOD_ERR_ABORTED);
  EXPECT_TEXT(rt_, "tensor 'fails.first': its ready event failed: the device is gone");
  EXPECT_EQ(statuses[0], KOROVOD_ERR_ABORTED);
  EXPECT_NE(statuses[1], KOROVOD_ERR_IN_PROGRESS);  // waited for too: ended one way or the other
  EXPECT_NE(std::string(korovod_handle_error(rt_, handles[0])).find("the device is gone"), std::string::npos);
  korovod_release_many(rt_, handles, 2);
}

}  // namespace
}  // namespace korovod::capi_test
