// The C ABI (korovod/c_api.h) without MPI or a launcher, part 2: every operation type through
// korovod_enqueue, groups, outputs as DLPack tensors (valid after destroy), error codes and
// texts, ready events (rt_capi_test).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "capi/dlpack.h"
#include "capi/testing/capi_test_util.h"

namespace korovod::capi_test {
namespace {

namespace dl = korovod::dlpack;

TEST_F(CApi, AllreduceEveryOpScalingAndInPlace) {
  const struct { int op; float expect; } cases[] = {
      {KOROVOD_SUM, 3.f}, {KOROVOD_AVERAGE, 3.f}, {KOROVOD_MIN, 3.f}, {KOROVOD_MAX, 3.f}, {KOROVOD_PRODUCT, 3.f}};
  for (const auto& c : cases) {
    std::vector<float> in(5, 3.f), out(5, -1.f);
    Op a;
    a.input = in.data();
    a.output = out.data();
    a.shape = {5};
    a.op = c.op;
    done(a.enqueue(rt_));
    EXPECT_EQ(out, std::vector<float>(5, c.expect)) << "op " << c.op;
    korovod_release(rt_, 0);  // an unknown handle: ignored
  }
  std::vector<double> d = {1.5, -2.0};
  Op scaled;
  scaled.input = d.data();
  scaled.dtype = KOROVOD_FLOAT64;
  scaled.shape = {2};
  scaled.prescale = 2.0;
  scaled.postscale = 3.0;  // output NULL: in place
  done(scaled.enqueue(rt_));
  EXPECT_EQ(d, (std::vector<double>{9.0, -12.0}));
  std::vector<int64_t> i64 = {7, -8, 9};
  Op ints;
  ints.input = i64.data();
  ints.output = i64.data();
  ints.dtype = KOROVOD_INT64;
  ints.shape = {3};
  done(ints.enqueue(rt_));
  EXPECT_EQ(i64, (std::vector<int64_t>{7, -8, 9}));
}

TEST_F(CApi, AllgatherOutputMovesIntoDlpackAndOutlivesTheRuntime) {
  std::vector<int64_t> in = {1, 2, 3, 4, 5, 6};
  Op g;
  g.type = KOROVOD_OP_ALLGATHER;
  g.name = "gathered";
  g.input = in.data();
  g.dtype = KOROVOD_INT64;
  g.shape = {3, 2};
  const int64_t h = g.enqueue(rt_);
  done(h);
  void* data = nullptr;
  int ndim = 0;
  int64_t shape[4] = {};
  ASSERT_EQ(korovod_handle_output(rt_, h, &data, &ndim, shape, 4), KOROVOD_OK);
  ASSERT_EQ(ndim, 2);
  EXPECT_EQ(shape[0], 3);
  EXPECT_EQ(shape[1], 2);
  EXPECT_EQ(std::memcmp(data, in.data(), 48), 0);
  EXPECT_EQ(korovod_handle_take_dlpack(rt_, h, dl::kDLInt, 32), nullptr);  // bits must match int64
  EXPECT_NE(std::string(korovod_last_error(rt_)).find("int64"), std::string::npos) << korovod_last_error(rt_);
  auto* m = static_cast<dl::ManagedTensor*>(korovod_handle_take_dlpack(rt_, h, dl::kDLInt, 64));
  ASSERT_NE(m, nullptr) << korovod_last_error(rt_);
  EXPECT_EQ(m->dl_tensor.data, data);  // the very memory the collective wrote: no copy
  EXPECT_EQ(m->dl_tensor.device.device_type, dl::kDLCPU);
  EXPECT_EQ(m->dl_tensor.device.device_id, 0);
  EXPECT_EQ(m->dl_tensor.ndim, 2);
  EXPECT_EQ(m->dl_tensor.shape[0], 3);
  EXPECT_EQ(m->dl_tensor.shape[1], 2);
  EXPECT_EQ(m->dl_tensor.strides, nullptr);
  EXPECT_EQ(m->dl_tensor.byte_offset, 0u);
  EXPECT_EQ(m->dl_tensor.dtype.code, dl::kDLInt);
  EXPECT_EQ(m->dl_tensor.dtype.bits, 64);
  EXPECT_EQ(m->dl_tensor.dtype.lanes, 1);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(m->dl_tensor.data) % 64, 0u);
  // Taken: neither a second take nor handle_output may hand it out again.
  EXPECT_EQ(korovod_handle_take_dlpack(rt_, h, dl::kDLInt, 64), nullptr);
  EXPECT_EQ(korovod_handle_output(rt_, h, &data, &ndim, shape, 4), KOROVOD_ERR_INVALID_ARGUMENT);
  korovod_release(rt_, h);
  ASSERT_EQ(korovod_shutdown(rt_), KOROVOD_OK);
  korovod_destroy(rt_);
  rt_ = init();  // TearDown destroys it
  const int64_t* values = static_cast<const int64_t*>(m->dl_tensor.data);
  EXPECT_EQ(std::vector<int64_t>(values, values + 6), in);  // after release, shutdown and destroy
  korovod_dlpack_delete(m);
  korovod_dlpack_delete(nullptr);
}

TEST_F(CApi, EveryDtypeCrossesTheAbi) {
  // Allgather copies bytes: the dtype only has to arrive as the same element size.
  const int sizes[] = {1, 1, 2, 2, 4, 8, 2, 4, 8, 1, 2};  // KOROVOD_UINT8 .. KOROVOD_BFLOAT16
  for (int dtype = KOROVOD_UINT8; dtype <= KOROVOD_BFLOAT16; ++dtype) {
    std::vector<unsigned char> in(4 * sizes[dtype]);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<unsigned char>(i * 7 + dtype);
    if (dtype == KOROVOD_BOOL) std::fill(in.begin(), in.end(), 1);
    Op g;
    g.type = KOROVOD_OP_ALLGATHER;
    g.input = in.data();
    g.dtype = dtype;
    g.shape = {4};
    const int64_t h = g.enqueue(rt_);
    done(h);
    auto* m = static_cast<dl::ManagedTensor*>(korovod_handle_take_dlpack(rt_, h, dl::kDLUInt, 8 * sizes[dtype]));
    ASSERT_NE(m, nullptr) << "dtype " << dtype << ": " << korovod_last_error(rt_);
    EXPECT_EQ(std::memcmp(m->dl_tensor.data, in.data(), in.size()), 0) << "dtype " << dtype;
    korovod_dlpack_delete(m);
    korovod_release(rt_, h);
  }
}

TEST_F(CApi, BroadcastAlltoallReducescatterBarrierJoin) {
  std::vector<float> b = {1.f, 2.f};
  Op bc;
  bc.type = KOROVOD_OP_BROADCAST;
  bc.input = b.data();
  bc.shape = {2};
  done(bc.enqueue(rt_));
  EXPECT_EQ(b, (std::vector<float>{1.f, 2.f}));

  std::vector<int32_t> rows = {10, 11, 12, 13, 14};
  Op a2a;
  a2a.type = KOROVOD_OP_ALLTOALL;
  a2a.input = rows.data();
  a2a.dtype = KOROVOD_INT32;
  a2a.shape = {5};
  a2a.splits = {3};  // 3 of the 5 rows to the one rank
  const int64_t h = a2a.enqueue(rt_);
  done(h);
  int32_t received[2] = {};
  EXPECT_EQ(korovod_handle_received_splits(rt_, h, received, 2), 1);
  EXPECT_EQ(received[0], 3);
  auto* m = static_cast<dl::ManagedTensor*>(korovod_handle_take_dlpack(rt_, h, dl::kDLInt, 32));
  ASSERT_NE(m, nullptr) << korovod_last_error(rt_);
  ASSERT_EQ(m->dl_tensor.ndim, 1);
  EXPECT_EQ(m->dl_tensor.shape[0], 3);
  EXPECT_EQ(static_cast<int32_t*>(m->dl_tensor.data)[2], 12);
  korovod_dlpack_delete(m);
  korovod_release(rt_, h);

  std::vector<float> rs = {1.f, 2.f, 3.f, 4.f, 5.f, 6.f};
  Op r;
  r.type = KOROVOD_OP_REDUCESCATTER;
  r.input = rs.data();
  r.shape = {3, 2};
  r.op = KOROVOD_AVERAGE;
  r.postscale = 0.5;
  const int64_t hr = r.enqueue(rt_);
  done(hr);
  m = static_cast<dl::ManagedTensor*>(korovod_handle_take_dlpack(rt_, hr, dl::kDLFloat, 32));
  ASSERT_NE(m, nullptr) << korovod_last_error(rt_);
  ASSERT_EQ(m->dl_tensor.ndim, 2);
  EXPECT_EQ(m->dl_tensor.shape[0], 3);
  EXPECT_EQ(m->dl_tensor.shape[1], 2);
  EXPECT_FLOAT_EQ(static_cast<float*>(m->dl_tensor.data)[5], 3.f);
  korovod_dlpack_delete(m);
  korovod_release(rt_, hr);

  Op barrier;
  barrier.type = KOROVOD_OP_BARRIER;
  done(barrier.enqueue(rt_));
  done(korovod_barrier(rt_, 0));
  Op join;
  join.type = KOROVOD_OP_JOIN;
  const int64_t hj = join.enqueue(rt_);
  done(hj);
  EXPECT_EQ(korovod_handle_last_joined_rank(rt_, hj), 0);
  // An op with no runtime-allocated output has nothing to take.
  EXPECT_EQ(korovod_handle_take_dlpack(rt_, hj, dl::kDLInt, 32), nullptr);
  EXPECT_NE(std::string(korovod_last_error(rt_)).find("no output"), std::string::npos) << korovod_last_error(rt_);
}

TEST_F(CApi, GroupsQueueAllOrNone) {
  std::vector<float> x = {1.f, 2.f, 3.f, 4.f}, y = {5.f, 6.f};
  korovod_group* g = korovod_group_new();
  Op a;
  a.type = KOROVOD_OP_ALLGATHER;
  a.name = "ga";
  a.input = x.data();
  a.shape = {2, 2};
  Op b = a;
  b.name = "gb";
  b.input = y.data();
  b.shape = {1, 2};
  Op c;
  c.type = KOROVOD_OP_REDUCESCATTER;
  c.name = "gc";
  c.input = x.data();
  c.shape = {4};
  ASSERT_EQ(a.add_to(g), KOROVOD_OK);
  ASSERT_EQ(b.add_to(g), KOROVOD_OK);
  ASSERT_EQ(c.add_to(g), KOROVOD_OK);
  int64_t handles[3] = {};
  EXPECT_EQ(korovod_group_enqueue(rt_, g, handles, 2), KOROVOD_ERR_INVALID_ARGUMENT);  // no room: nothing queued
  EXPECT_EQ(korovod_group_enqueue(rt_, g, handles, 3), KOROVOD_OK);                    // the group was emptied
  ASSERT_EQ(a.add_to(g), KOROVOD_OK);
  ASSERT_EQ(b.add_to(g), KOROVOD_OK);
  ASSERT_EQ(c.add_to(g), KOROVOD_OK);
  ASSERT_EQ(korovod_group_enqueue(rt_, g, handles, 3), KOROVOD_OK) << korovod_last_error(rt_);
  for (int64_t h : handles) done(h);
  const int64_t expect_dim0[] = {2, 1, 4};
  for (int i = 0; i < 3; ++i) {
    auto* m = static_cast<dl::ManagedTensor*>(korovod_handle_take_dlpack(rt_, handles[i], dl::kDLFloat, 32));
    ASSERT_NE(m, nullptr) << korovod_last_error(rt_);
    EXPECT_EQ(m->dl_tensor.shape[0], expect_dim0[i]);
    EXPECT_EQ(static_cast<float*>(m->dl_tensor.data)[0], i == 1 ? 5.f : 1.f);
    korovod_dlpack_delete(m);
    korovod_release(rt_, handles[i]);
  }
  // A failed add fails the next enqueue with its error; nothing of the group runs.
  Op bad = a;
  bad.type = 99;
  ASSERT_EQ(a.add_to(g), KOROVOD_OK);
  EXPECT_EQ(bad.add_to(g), KOROVOD_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(korovod_group_enqueue(rt_, g, handles, 3), KOROVOD_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(korovod_last_error(rt_)).find("unknown operation type 99"), std::string::npos);
  // Two ops of one name, or two process sets, in a group: refused whole; the names stay free.
  Op same = a;
  ASSERT_EQ(a.add_to(g), KOROVOD_OK);
  ASSERT_EQ(same.add_to(g), KOROVOD_OK);
  EXPECT_EQ(korovod_group_enqueue(rt_, g, handles, 3), KOROVOD_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(korovod_last_error(rt_)).find("DUPLICATE_NAME_ERROR"), std::string::npos);
  Op other_set = b;
  other_set.process_set = 1;
  ASSERT_EQ(a.add_to(g), KOROVOD_OK);
  ASSERT_EQ(other_set.add_to(g), KOROVOD_OK);
  EXPECT_EQ(korovod_group_enqueue(rt_, g, handles, 3), KOROVOD_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(a.add_to(g), KOROVOD_OK);
  ASSERT_EQ(korovod_group_enqueue(rt_, g, handles, 3), KOROVOD_OK);
  done(handles[0]);
  korovod_release(rt_, handles[0]);
  korovod_group_free(g);

  // The per-op grouped allreduce over the same machinery.
  std::vector<float> p = {1.f}, q = {2.f, 3.f};
  const int64_t pshape[] = {1}, qshape[] = {2};
  korovod_tensor ins[] = {{p.data(), KOROVOD_FLOAT32, 1, pshape, -1}, {q.data(), KOROVOD_FLOAT32, 1, qshape, -1}};
  const char* names[] = {"p", "q"};
  int64_t hs[2] = {};
  ASSERT_EQ(korovod_grouped_allreduce(rt_, names, ins, ins, 2, KOROVOD_SUM, 2.0, 1.0, 0, hs), KOROVOD_OK);
  done(hs[0]);
  done(hs[1]);
  EXPECT_EQ(q, (std::vector<float>{4.f, 6.f}));
}

TEST_F(CApi, CallErrorsCarryCodeAndText) {
  std::vector<float> x(4, 1.f);
  auto expect_error = [&](const Op& op, int code, const std::string& text) {
    const int64_t h = op.enqueue(rt_);
    EXPECT_EQ(h, code) << text;
    EXPECT_NE(std::string(korovod_last_error(rt_)).find(text), std::string::npos)
        << "wanted '" << text << "' in: " << korovod_last_error(rt_);
  };
  Op op;
  op.input = x.data();
  op.shape = {4};
  Op t = op;
  t.type = 9;
  expect_error(t, KOROVOD_ERR_INVALID_ARGUMENT, "unknown operation type 9");
  t = op;
  t.dtype = 42;
  t.name = "bad_dtype";
  expect_error(t, KOROVOD_ERR_INVALID_ARGUMENT, "tensor 'bad_dtype': invalid");
  t = op;
  t.type = 4;  // Horovod's ADASUM request type: korovod asks for it by op
  expect_error(t, KOROVOD_ERR_INVALID_ARGUMENT, "ask for Adasum as an allreduce with op ADASUM");
  t = op;
  t.op = 17;
  expect_error(t, KOROVOD_ERR_INVALID_ARGUMENT, "unknown reduce op 17");
  t = op;
  t.type = KOROVOD_OP_ALLGATHER;
  t.output = x.data();
  expect_error(t, KOROVOD_ERR_INVALID_ARGUMENT, "pass output NULL");
  t = op;
  t.type = KOROVOD_OP_ALLTOALL;
  t.splits = {1, 1};
  expect_error(t, KOROVOD_ERR_INVALID_ARGUMENT, "2 splits for 1 ranks");
  t = op;
  t.type = KOROVOD_OP_BROADCAST;
  t.root_rank = 3;
  expect_error(t, KOROVOD_ERR_INVALID_ARGUMENT, "root rank 3 is not in process set 0");
  t = op;
  t.process_set = 7;
  expect_error(t, KOROVOD_ERR_INVALID_ARGUMENT, "unknown process set 7");
  EXPECT_EQ(korovod_enqueue(rt_, KOROVOD_OP_ALLREDUCE, "x", x.data(), nullptr, KOROVOD_FLOAT32, 1, nullptr, -1,
                            KOROVOD_SUM, 1, 1, 0, nullptr, 0, 0, nullptr),
            KOROVOD_ERR_INVALID_ARGUMENT);  // ndim 1, shape NULL
  EXPECT_EQ(korovod_poll(rt_, 123456), KOROVOD_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(korovod_last_error(rt_)).find("unknown handle 123456"), std::string::npos);
  EXPECT_EQ(korovod_wait(rt_, 123456), KOROVOD_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(korovod_enqueue(nullptr, 0, "x", x.data(), nullptr, KOROVOD_FLOAT32, 1, op.shape.data(), -1, 1, 1, 1,
                            0, nullptr, 0, 0, nullptr),
            KOROVOD_ERR_NOT_INITIALIZED);
  // The runtime is still usable after all of these.
  done(op.enqueue(rt_));
}

// (A duplicate name on one rank while the first is pending needs peers that have not submitted
// it yet: capi_check_main.cc. Here: the deterministic in-group case, GroupsQueueAllOrNone.)
TEST_F(CApi, ReadyEventHoldsTheOpAndWaitForTimesOut) {
  // With inline cycles (the default) the waiting caller runs the cycle and meets the event that
  // is not ready: its timed wait still returns on time, and the operation completes later.
  std::atomic<bool> ready{false};
  std::atomic<int> destroyed{0};
  std::vector<float> x(3, 2.f);
  Op first;
  first.name = "held";
  first.input = x.data();
  first.shape = {3};
  first.ready = test_event(&ready, &destroyed);
  const int64_t h = first.enqueue(rt_);
  ASSERT_GT(h, 0) << korovod_last_error(rt_);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(korovod_wait_for(rt_, h, 0.2), KOROVOD_ERR_IN_PROGRESS);
  // On time: not the ready event's own bound (half the 60 s collective timeout).
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 2.0);
  EXPECT_EQ(korovod_wait_for(rt_, h, 0.05), KOROVOD_ERR_IN_PROGRESS);  // again, now with the cycle begun
  EXPECT_EQ(korovod_poll(rt_, h), 0);
  EXPECT_STREQ(korovod_handle_error(rt_, h), "");
  EXPECT_EQ(korovod_handle_take_dlpack(rt_, h, dl::kDLFloat, 32), nullptr);
  ready = true;
  // Nobody waits now: the background thread carries on with the cycle the caller left.
  const auto fired = std::chrono::steady_clock::now();
  while (korovod_poll(rt_, h) == 0 && std::chrono::steady_clock::now() - fired < std::chrono::seconds(10)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(korovod_poll(rt_, h), 1);
  EXPECT_EQ(korovod_wait_for(rt_, h, 10.0), KOROVOD_OK);
  EXPECT_EQ(x, std::vector<float>(3, 2.f));
  korovod_release(rt_, h);
  EXPECT_EQ(korovod_poll(rt_, h), KOROVOD_ERR_INVALID_ARGUMENT);  // released
  EXPECT_EQ(destroyed.load(), 1);  // the runtime let go of the event
}

TEST_F(CApi, ReadyEventsAreConsumedAlsoOnError) {
  std::atomic<bool> ready{true};
  std::atomic<int> destroyed{0};
  std::vector<float> x(2, 1.f);
  Op bad;
  bad.type = 77;
  bad.input = x.data();
  bad.shape = {2};
  bad.ready = test_event(&ready, &destroyed);
  EXPECT_EQ(bad.enqueue(rt_), KOROVOD_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(destroyed.load(), 1);
  bad.ready = test_event(&ready, &destroyed);
  EXPECT_EQ(bad.enqueue(nullptr), KOROVOD_ERR_NOT_INITIALIZED);
  EXPECT_EQ(destroyed.load(), 2);
  korovod_group* g = korovod_group_new();
  bad.ready = test_event(&ready, &destroyed);
  EXPECT_EQ(bad.add_to(g), KOROVOD_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(destroyed.load(), 3);
  Op good;
  good.input = x.data();
  good.shape = {2};
  good.ready = test_event(&ready, &destroyed);
  ASSERT_EQ(good.add_to(g), KOROVOD_OK);
  korovod_group_free(g);  // never enqueued: its event goes with it
  EXPECT_EQ(destroyed.load(), 4);
  korovod_event_free(nullptr);
}

}  // namespace
}  // namespace korovod::capi_test
