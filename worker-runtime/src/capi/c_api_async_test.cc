// The C ABI, part 4: korovod_enqueue_async -- completion by callback, with the framework's own
// output allocation, as an asynchronous framework kernel uses it (rt_capi_test).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "capi/testing/capi_test_util.h"

namespace korovod::capi_test {
namespace {

// What one op's callbacks saw; the test waits on it.
struct Outcome {
  std::mutex mu;
  std::condition_variable cv;
  int calls = 0;
  int status = 1;
  std::string text;
  std::vector<int32_t> received_splits;
  int last_joined_rank = -2;
  // alloc: the shape asked for and the buffer handed out (fail_alloc: refuse it).
  std::vector<int64_t> alloc_shape;
  std::vector<std::byte> buffer;
  int alloc_calls = 0;
  bool fail_alloc = false;

  static void done(void* arg, const korovod_op_result* r) {
    auto* o = static_cast<Outcome*>(arg);
    std::lock_guard<std::mutex> lock(o->mu);
    ++o->calls;
    o->status = r->status;
    o->text = r->error_text;
    o->received_splits.assign(r->received_splits, r->received_splits + r->num_received_splits);
    o->last_joined_rank = r->last_joined_rank;
    o->cv.notify_all();
  }
  static int alloc(void* arg, int ndim, const int64_t* shape, void** data) {
    auto* o = static_cast<Outcome*>(arg);
    std::lock_guard<std::mutex> lock(o->mu);
    ++o->alloc_calls;
    o->alloc_shape.assign(shape, shape + ndim);
    if (o->fail_alloc) return 1;
    int64_t n = 1;
    for (int i = 0; i < ndim; ++i) n *= shape[i];
    o->buffer.assign(static_cast<size_t>(n) * 8, std::byte{0});  // room for any dtype
    *data = o->buffer.data();
    return 0;
  }
  // Waits (bounded) for the done callback; false if it did not come.
  bool wait() {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(30), [&] { return calls > 0; });
  }
};

int enqueue_async(korovod_runtime* rt, const Op& op, Outcome& o, bool with_alloc) {
  return korovod_enqueue_async(rt, op.type, op.name, op.input, op.output, op.dtype,
                               static_cast<int>(op.shape.size()), op.shape.data(), op.device, op.op, op.prescale,
                               op.postscale, op.root_rank, op.splits.empty() ? nullptr : op.splits.data(),
                               static_cast<int>(op.splits.size()), op.process_set, op.ready,
                               with_alloc ? &Outcome::alloc : nullptr, &Outcome::done, &o);
}

TEST_F(CApi, EnqueueAsyncCallsDoneOnceWhenTheOpEndsWithoutAThreadWaiting) {
  // A ready event holds the op: the call returns while it is pending, done comes when it ends.
  std::atomic<bool> ready{false};
  std::atomic<int> destroyed{0};
  std::vector<float> in = {1.f, 2.f, 3.f}, out(3, 0.f);
  Op a;
  a.name = "held";
  a.input = in.data();
  a.output = out.data();
  a.shape = {3};
  a.prescale = 2.0;
  a.postscale = 0.5;
  a.ready = test_event(&ready, &destroyed);
  Outcome o;
  ASSERT_EQ(enqueue_async(rt_, a, o, false), KOROVOD_OK) << korovod_last_error(rt_);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  {
    std::lock_guard<std::mutex> lock(o.mu);
    EXPECT_EQ(o.calls, 0) << "done before the tensor was ready";
  }
  ready = true;
  ASSERT_TRUE(o.wait());
  EXPECT_EQ(o.status, KOROVOD_OK) << o.text;
  EXPECT_EQ(o.text, "");
  EXPECT_EQ(out, (std::vector<float>{1.f, 2.f, 3.f}));  // (x * 2) summed over 1 rank, * 0.5
  EXPECT_EQ(o.last_joined_rank, -1);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(o.calls, 1);
  EXPECT_EQ(destroyed.load(), 1);  // the event was consumed
  // The same name again: the first one is gone from the runtime (nobody had to release it).
  Outcome again;
  a.ready = nullptr;
  ASSERT_EQ(enqueue_async(rt_, a, again, false), KOROVOD_OK) << korovod_last_error(rt_);
  ASSERT_TRUE(again.wait());
  EXPECT_EQ(again.status, KOROVOD_OK) << again.text;
}

TEST_F(CApi, EnqueueAsyncWritesRuntimeSizedOutputsWhereAllocSays) {
  std::vector<int64_t> rows = {1, 2, 3, 4, 5, 6};
  Op g;
  g.type = KOROVOD_OP_ALLGATHER;
  g.name = "gathered";
  g.input = rows.data();
  g.dtype = KOROVOD_INT64;
  g.shape = {3, 2};
  Outcome og;
  ASSERT_EQ(enqueue_async(rt_, g, og, true), KOROVOD_OK) << korovod_last_error(rt_);
  ASSERT_TRUE(og.wait());
  ASSERT_EQ(og.status, KOROVOD_OK) << og.text;
  EXPECT_EQ(og.alloc_calls, 1);
  EXPECT_EQ(og.alloc_shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(std::memcmp(og.buffer.data(), rows.data(), 48), 0);

  std::vector<int32_t> send = {10, 11, 12, 13, 14};
  Op t;
  t.type = KOROVOD_OP_ALLTOALL;
  t.name = "exchanged";
  t.input = send.data();
  t.dtype = KOROVOD_INT32;
  t.shape = {5};
  t.splits = {3};
  Outcome ot;
  ASSERT_EQ(enqueue_async(rt_, t, ot, true), KOROVOD_OK) << korovod_last_error(rt_);
  ASSERT_TRUE(ot.wait());
  ASSERT_EQ(ot.status, KOROVOD_OK) << ot.text;
  EXPECT_EQ(ot.alloc_shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(ot.received_splits, (std::vector<int32_t>{3}));
  EXPECT_EQ(reinterpret_cast<int32_t*>(ot.buffer.data())[2], 12);

  std::vector<float> rs = {1.f, 2.f, 3.f, 4.f};
  Op r;
  r.type = KOROVOD_OP_REDUCESCATTER;
  r.name = "scattered";
  r.input = rs.data();
  r.shape = {2, 2};
  r.postscale = 3.0;
  Outcome orr;
  ASSERT_EQ(enqueue_async(rt_, r, orr, true), KOROVOD_OK) << korovod_last_error(rt_);
  ASSERT_TRUE(orr.wait());
  ASSERT_EQ(orr.status, KOROVOD_OK) << orr.text;
  EXPECT_EQ(orr.alloc_shape, (std::vector<int64_t>{2, 2}));
  EXPECT_FLOAT_EQ(reinterpret_cast<float*>(orr.buffer.data())[3], 12.f);

  Op j;
  j.type = KOROVOD_OP_JOIN;
  Outcome oj;
  ASSERT_EQ(enqueue_async(rt_, j, oj, false), KOROVOD_OK) << korovod_last_error(rt_);
  ASSERT_TRUE(oj.wait());
  EXPECT_EQ(oj.status, KOROVOD_OK) << oj.text;
  EXPECT_EQ(oj.last_joined_rank, 0);
}

TEST_F(CApi, EnqueueAsyncErrors) {
  std::vector<float> x(4, 1.f);
  Op op;
  op.name = "x";
  op.input = x.data();
  op.shape = {4};
  auto refused = [&](const Op& o, bool with_alloc, const std::string& text) {
    Outcome out;
    EXPECT_EQ(enqueue_async(rt_, o, out, with_alloc), KOROVOD_ERR_INVALID_ARGUMENT) << text;
    EXPECT_NE(std::string(korovod_last_error(rt_)).find(text), std::string::npos)
        << "wanted '" << text << "' in: " << korovod_last_error(rt_);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ(out.calls, 0) << "done called for a refused op: " << text;
  };
  Op g = op;
  g.type = KOROVOD_OP_ALLGATHER;
  refused(g, false, "tensor 'x': ALLGATHER needs alloc");
  refused(op, true, "tensor 'x': ALLREDUCE writes to output; pass alloc NULL");
  Op bad_set = op;
  bad_set.process_set = 7;
  refused(bad_set, false, "unknown process set 7");
  EXPECT_EQ(korovod_enqueue_async(rt_, KOROVOD_OP_ALLREDUCE, "x", x.data(), nullptr, KOROVOD_FLOAT32, 1,
                                  op.shape.data(), -1, KOROVOD_SUM, 1, 1, 0, nullptr, 0, 0, nullptr, nullptr,
                                  nullptr, nullptr),
            KOROVOD_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(korovod_last_error(rt_)).find("done is NULL"), std::string::npos);
  // Refusals leave the runtime usable.
  Outcome fine;
  ASSERT_EQ(enqueue_async(rt_, op, fine, false), KOROVOD_OK);
  ASSERT_TRUE(fine.wait());
  EXPECT_EQ(fine.status, KOROVOD_OK) << fine.text;
  // The framework cannot allocate: the op fails through done, naming the tensor, and the runtime
  // stops (as for any failed output allocation: the other ranks cannot finish the collective).
  Outcome no_memory;
  no_memory.fail_alloc = true;
  ASSERT_EQ(enqueue_async(rt_, g, no_memory, true), KOROVOD_OK) << korovod_last_error(rt_);
  ASSERT_TRUE(no_memory.wait());
  EXPECT_EQ(no_memory.status, KOROVOD_ERR_ABORTED);
  EXPECT_NE(no_memory.text.find("tensor 'x': the framework could not allocate"), std::string::npos) << no_memory.text;
  // The engine stops right after failing the op (done first). An op queued from now on is
  // refused, or -- queued in the moment before the engine recorded its stop -- ends through done
  // with an error; it never stays pending with nobody to end it.
  for (int attempt = 0; attempt < 20; ++attempt) {
    Outcome later;
    const int rc = enqueue_async(rt_, op, later, false);
    if (rc == KOROVOD_OK) {
      ASSERT_TRUE(later.wait()) << "an op queued on a stopped engine never ended";
      EXPECT_NE(later.status, KOROVOD_OK);
    } else {
      EXPECT_EQ(rc, KOROVOD_ERR_ABORTED);
      EXPECT_EQ(later.calls, 0);
    }
  }
}

TEST_F(CApi, EnqueueAsyncOpThatNeverRunsEndsThroughDone) {
  // A tensor that never becomes ready fails after the collective timeout; done reports it.
  korovod_destroy(rt_);
  setenv("KOROVOD_COLLECTIVE_TIMEOUT_SECONDS", "1", 1);
  rt_ = init();
  unsetenv("KOROVOD_COLLECTIVE_TIMEOUT_SECONDS");
  ASSERT_NE(rt_, nullptr);
  std::atomic<bool> ready{false};
  std::atomic<int> destroyed{0};
  std::vector<float> x(4, 1.f);
  Op op;
  op.name = "never_ready";
  op.input = x.data();
  op.shape = {4};
  op.ready = test_event(&ready, &destroyed);
  Outcome o;
  ASSERT_EQ(enqueue_async(rt_, op, o, false), KOROVOD_OK) << korovod_last_error(rt_);
  ASSERT_TRUE(o.wait());
  EXPECT_LT(o.status, 0);
  EXPECT_NE(o.text.find("never_ready"), std::string::npos) << o.text;
  EXPECT_EQ(o.calls, 1);
  korovod_shutdown(rt_);
  Outcome after;
  op.ready = nullptr;  // consumed by the first call
  EXPECT_LT(enqueue_async(rt_, op, after, false), 0);  // shut down: refused, no callback
  EXPECT_EQ(after.calls, 0);
}

}  // namespace
}  // namespace korovod::capi_test
