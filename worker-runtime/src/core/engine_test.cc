// The whole engine (Runtime) with N ranks as N threads over the fake transport: collectives,
// fusion, errors to every rank, stalls, a dead rank, join and process sets -- no MPI needed.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <numeric>

#include "algorithms/executor.h"
#include "core/testing/test_ranks.h"
#include "korovod/runtime.h"
#include "transport/fake/fake_ranks.h"
#include "transport/fake/fake_world.h"

namespace korovod {
namespace {

using testing::fast_config;
using testing::make_fake_runtime;
using testing::run_ranks;

TensorView f32(std::vector<float>& v, std::vector<int64_t> shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(v.size())};
  return TensorView{v.data(), DataType::kFloat32, shape, kCpuDevice};
}

TEST(Engine, AllreduceOpsAcrossSizesIncludingEmpty) {
  const int n = 3;
  auto world = std::make_shared<fake::FakeWorld>(n);
  run_ranks(n, [&](int rank) {
    auto rt = make_fake_runtime(world, rank, fast_config());
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
      for (int count : {0, 1, 7}) {
        std::vector<float> in(count, static_cast<float>(rank + 1)), out(count, -1);
        auto h = rt->allreduce("t" + std::to_string(count), f32(in), f32(out), op);
        ASSERT_TRUE(h.is_ok()) << h.status().to_string();
        ASSERT_TRUE(rt->wait(*h).is_ok());
        const float expect[] = {2.f, 6.f, 0, 1.f, 3.f, 6.f};  // by ReduceOp value: avg, sum, -, min, max, prod
        for (float v : out) ASSERT_FLOAT_EQ(v, expect[static_cast<int>(op)]) << reduce_op_name(op);
      }
    }
    EXPECT_TRUE(rt->shutdown().is_ok());
  });
}

TEST(Engine, GroupedAllreduceFusesAndRunsCallbacksAndScales) {
  const int n = 2;
  auto world = std::make_shared<fake::FakeWorld>(n);
  run_ranks(n, [&](int rank) {
    auto rt = make_fake_runtime(world, rank, fast_config());
    std::vector<std::vector<float>> ins(20, std::vector<float>(5, 1.f + rank)), outs(20, std::vector<float>(5));
    std::vector<std::string> names;
    std::vector<TensorView> iv, ov;
    for (int i = 0; i < 20; ++i) {
      names.push_back("g" + std::to_string(i));
      iv.push_back(f32(ins[i]));
      ov.push_back(f32(outs[i]));
    }
    auto hs = rt->grouped_allreduce(names, iv, ov, ReduceOp::kSum, /*prescale=*/2.0, /*postscale=*/0.5);
    ASSERT_TRUE(hs.is_ok());
    for (Handle h : *hs) ASSERT_TRUE(rt->wait(h).is_ok());
    for (auto& o : outs) for (float v : o) ASSERT_FLOAT_EQ(v, 3.f);  // (1+2)*2*0.5
    std::atomic<int> called{0};
    CollectiveArgs a;
    a.name = "cb";
    a.input = f32(ins[0]);
    a.output = f32(outs[0]);
    a.op = ReduceOp::kSum;
    a.on_done = [&](const Status& s, const OpOutput&) { if (s.is_ok()) ++called; };
    auto h = rt->enqueue(std::move(a));
    ASSERT_TRUE(h.is_ok());
    while (!*rt->poll(*h)) std::this_thread::yield();
    EXPECT_EQ(called.load(), 1);
    EXPECT_TRUE(rt->shutdown().is_ok());
  });
}

TEST(Engine, ManyTensorsOneByOneCompleteTogetherWithEveryCallbackFirst) {
  // A training step's gradients, submitted one by one every step (the first step negotiates,
  // later ones hit the response cache and reuse the fused layout): each handle's callback has
  // run by the time a wait on it returns, and every result is right, in place or not.
  const int n = 2, tensors = 300, steps = 3;
  auto world = std::make_shared<fake::FakeWorld>(n);
  run_ranks(n, [&](int rank) {
    auto rt = make_fake_runtime(world, rank, fast_config());
    std::vector<std::vector<float>> ins(tensors), outs(tensors);
    std::vector<std::atomic<int>> calls(tensors);
    for (int step = 0; step < steps; ++step) {
      std::vector<Handle> handles;
      for (int t = 0; t < tensors; ++t) {
        ins[t].assign(static_cast<size_t>(1 + t % 7), static_cast<float>(rank + step + t));
        outs[t].assign(ins[t].size(), -1.f);
        const bool in_place = t % 2 == 1;
        CollectiveArgs a;
        a.name = "grad." + std::to_string(t);
        a.input = f32(ins[t]);
        a.output = in_place ? f32(ins[t]) : f32(outs[t]);
        a.op = ReduceOp::kAverage;
        a.on_done = [&calls, t](const Status& s, const OpOutput&) { if (s.is_ok()) ++calls[t]; };
        Result<Handle> h = rt->enqueue(std::move(a));
        ASSERT_TRUE(h.is_ok()) << h.status().to_string();
        handles.push_back(*h);
      }
      for (int t = 0; t < tensors; ++t) {
        ASSERT_TRUE(rt->wait(handles[t]).is_ok());
        EXPECT_EQ(calls[t].load(), step + 1) << "tensor " << t << " step " << step;
        const std::vector<float>& result = t % 2 == 1 ? ins[t] : outs[t];
        for (float v : result) ASSERT_FLOAT_EQ(v, 0.5f + step + t) << "tensor " << t << " step " << step;
        rt->release(handles[t]);
      }
    }
    EXPECT_TRUE(rt->shutdown().is_ok());
  });
}

TEST(Engine, DuplicatePendingNameIsRefused) {
  // Rank 1 submits "dup" only after rank 0 has tried twice, so rank 0's first "dup" is certainly
  // still pending (it cannot complete without rank 1) when the second one arrives.
  auto world = std::make_shared<fake::FakeWorld>(2);
  std::atomic<bool> rank0_submitted{false};
  run_ranks(2, [&](int rank) {
    auto rt = make_fake_runtime(world, rank, fast_config());
    std::vector<float> a(1), b(1);
    if (rank == 1) {
      while (!rank0_submitted.load()) std::this_thread::yield();
    }
    auto h1 = rt->allreduce("dup", f32(a), f32(a));
    ASSERT_TRUE(h1.is_ok());
    if (rank == 0) {
      auto h2 = rt->allreduce("dup", f32(b), f32(b));
      rank0_submitted = true;
      ASSERT_FALSE(h2.is_ok());
      EXPECT_NE(h2.status().message().find("DUPLICATE_NAME"), std::string::npos);
    }
    EXPECT_TRUE(rt->wait(*h1).is_ok());
    EXPECT_TRUE(rt->shutdown().is_ok());
  });
}

TEST(Engine, DtypeMismatchErrorReachesEveryRankNamingTensorAndRanks) {
  const int n = 3;
  auto world = std::make_shared<fake::FakeWorld>(n);
  run_ranks(n, [&](int rank) {
    auto rt = make_fake_runtime(world, rank, fast_config());
    std::vector<double> buf(4);
    TensorView v{buf.data(), rank == 2 ? DataType::kFloat64 : DataType::kFloat32, {2}, kCpuDevice};
    auto h = rt->allreduce("mixed", v, v);
    ASSERT_TRUE(h.is_ok());
    Status s = rt->wait(*h);
    EXPECT_EQ(s.code(), StatusCode::kPreconditionError);
    EXPECT_NE(s.message().find("Mismatched data types for tensor 'mixed'"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("ranks [0, 1] sent float32, ranks [2] sent float64"), std::string::npos);
    EXPECT_TRUE(rt->shutdown().is_ok());
  });
}

TEST(Engine, RankThatNeverSubmitsFailsOthersWithinStallShutdownTime) {
  auto world = std::make_shared<fake::FakeWorld>(2);
  Config c = fast_config();
  c.stall_warning_seconds = 0.1;
  c.stall_shutdown_seconds = 0.3;
  run_ranks(2, [&](int rank) {
    auto rt = make_fake_runtime(world, rank, c);
    if (rank == 0) {
      std::vector<float> x(2);
      auto start = std::chrono::steady_clock::now();
      auto h = rt->allreduce("lonely", f32(x), f32(x));
      Status s = rt->wait(*h);
      double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      EXPECT_EQ(s.code(), StatusCode::kPreconditionError);
      EXPECT_NE(s.message().find("'lonely' stalled: ranks [1]"), std::string::npos) << s.message();
      EXPECT_LT(waited, 2.0);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(800));
    }
    EXPECT_TRUE(rt->shutdown().is_ok());
  });
}

// The steps of one negotiation cycle a survivor may name (core/negotiator.cc).
constexpr const char* kNegotiationSteps[] = {"exchanging the status and cache bits",
                                             "gathering the requests at the coordinator",
                                             "broadcasting the coordinator's responses"};

TEST(Engine, DeadRankMakesOthersFailWithinCollectiveTimeout) {
  auto world = std::make_shared<fake::FakeWorld>(3, std::chrono::seconds(60));
  Config c = fast_config();
  c.collective_timeout_seconds = 0.5;
  std::vector<std::unique_ptr<Runtime>> keep(3);
  run_ranks(3, [&](int rank) {
    keep[rank] = make_fake_runtime(world, rank, c);
    auto& rt = keep[rank];
    std::vector<float> x(2, 1);
    ASSERT_TRUE(rt->wait(*rt->allreduce("before", f32(x), f32(x))).is_ok());
    if (rank == 2) {
      world->kill(2);  // its engine stops taking part; the others hang in a collective
      return;
    }
    auto start = std::chrono::steady_clock::now();
    auto h = rt->allreduce("after", f32(x), f32(x));
    Status s = h.is_ok() ? rt->wait(*h) : h.status();
    double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(s.code(), StatusCode::kAborted) << s.to_string();
    EXPECT_LT(waited, 3.0);
    // The fake control cannot be interrupted (as MPI's): the watchdog's error carries what its
    // probe (ControlChannel::silent_peers) found.
    // And where this rank's loop waits: the negotiation of a cycle rank 2 never joined.
    EXPECT_NE(s.message().find("did not complete within 0.5 s (KOROVOD_COLLECTIVE_TIMEOUT_SECONDS): lost rank 2 "
                               "(no answer within 0.3 s); this rank waits in cycle "),
              std::string::npos)
        << s.message();
    // Which step depends on how far rank 2's loop had gone into that cycle with the others when
    // it was killed (its first step, seen under load the next two as well): a step is named.
    // (Plain finds: std::regex's locale caches race under TSAN when ranks are threads.)
    const std::string& m = s.message();
    const bool names_a_step =
        std::any_of(std::begin(kNegotiationSteps), std::end(kNegotiationSteps), [&m](const char* step) {
          return m.find(std::string(" of process set 0, negotiating: ") + step + "; all pending operations failed") !=
                 std::string::npos;
        });
    EXPECT_TRUE(names_a_step) << m;
    EXPECT_FALSE(rt->allreduce("later", f32(x), f32(x)).is_ok());  // resurfaced on the next call
  });
  for (auto& rt : keep) (void)rt->shutdown();
}

TEST(Engine, AllgatherBroadcastAlltoallReducescatterJoin) {
  const int n = 3;
  auto world = std::make_shared<fake::FakeWorld>(n);
  run_ranks(n, [&](int rank) {
    auto rt = make_fake_runtime(world, rank, fast_config());
    std::vector<float> rows(rank + 1, static_cast<float>(rank));  // dim0 = rank + 1
    auto g = rt->allgather("ag", f32(rows, {rank + 1, 1}));
    ASSERT_TRUE(rt->wait(*g).is_ok());
    OpOutput go = *rt->output(*g);
    EXPECT_EQ(go.shape, (std::vector<int64_t>{6, 1}));
    EXPECT_EQ(static_cast<float*>(go.data)[5], 2.f);

    std::vector<float> b(3, static_cast<float>(rank));
    ASSERT_TRUE(rt->wait(*rt->broadcast("bc", f32(b), /*root=*/1)).is_ok());
    EXPECT_EQ(b, std::vector<float>(3, 1.f));

    std::vector<float> send(4, static_cast<float>(rank));
    std::vector<int32_t> splits = {2, 1, 1};
    auto a = rt->alltoall("a2a", f32(send), splits);
    ASSERT_TRUE(rt->wait(*a).is_ok());
    OpOutput ao = *rt->output(*a);
    EXPECT_EQ(ao.received_splits, (std::vector<int32_t>(3, rank == 0 ? 2 : 1)));

    std::vector<float> rs(7, 1.f);  // 7 rows over 3 ranks: 3, 2, 2
    auto r = rt->reducescatter("rs", f32(rs, {7}), ReduceOp::kSum);
    ASSERT_TRUE(rt->wait(*r).is_ok());
    OpOutput ro = *rt->output(*r);
    EXPECT_EQ(ro.shape[0], rank == 0 ? 3 : 2);
    EXPECT_EQ(static_cast<float*>(ro.data)[0], 3.f);

    // Rank 0 joins early; ranks 1 and 2 still allreduce (rank 0 contributes zeros).
    if (rank == 0) {
      auto j = rt->join();
      ASSERT_TRUE(rt->wait(*j).is_ok());
      EXPECT_EQ(rt->output(*j)->last_joined_rank, 2);
    } else {
      std::vector<float> x(2, 3.f);
      ASSERT_TRUE(rt->wait(*rt->allreduce("during_join", f32(x), f32(x), ReduceOp::kAverage)).is_ok());
      EXPECT_FLOAT_EQ(x[0], 2.f);  // (0 + 3 + 3) / 3
      if (rank == 2) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      ASSERT_TRUE(rt->wait(*rt->join()).is_ok());
    }
    EXPECT_TRUE(rt->shutdown().is_ok());
  });
}

TEST(Engine, RankZeroLogsTheChosenDataPlanesOnceAtTheDefaultLevel) {
  const int n = 2;
  auto world = std::make_shared<fake::FakeWorld>(n);
  std::vector<std::vector<std::string>> lines(n);
  run_ranks(n, [&](int rank) {
    RuntimeOptions o;
    o.make_executor = make_executor;
    o.config = fast_config();
    o.config.log_level = LogLevel::kWarning;  // the default: the line must still show
    o.config.network_env = {{"NCCL_IB_HCA", "mlx5_0"}, {"UCX_NET_DEVICES", "mlx5_0:1"}};
    o.transport = std::make_shared<fake::FakeTransportProvider>(world, rank);
    o.backends.push_back(std::make_shared<fake::FakeBackendProvider>(world, rank));
    o.log_sink = [&lines, rank](LogLevel, const std::string& m) {
      if (m.rfind("korovod: data plane:", 0) == 0) lines[rank].push_back(m);
    };
    Result<std::unique_ptr<Runtime>> rt = Runtime::create(std::move(o));
    ASSERT_TRUE(rt.is_ok()) << rt.status().to_string();
    EXPECT_TRUE((*rt)->shutdown().is_ok());
  });
  EXPECT_EQ(lines[0], (std::vector<std::string>{
                          "korovod: data plane: FAKE (2 ranks on 1 host), control: FAKE; GPU data plane: none "
                          "(built without NCCL); NCCL_IB_HCA=mlx5_0 UCX_NET_DEVICES=mlx5_0:1"}));
  EXPECT_TRUE(lines[1].empty());
}

// The executor is injected (RuntimeOptions::make_executor): without one the runtime refuses to
// start, naming what is missing, rather than running cycles it cannot execute.
TEST(Engine, StartWithoutAnExecutorIsRefused) {
  auto world = std::make_shared<fake::FakeWorld>(1);
  RuntimeOptions o;
  o.config = fast_config();
  o.transport = std::make_shared<fake::FakeTransportProvider>(world, 0);
  o.backends.push_back(std::make_shared<fake::FakeBackendProvider>(world, 0));
  Result<std::unique_ptr<Runtime>> rt = Runtime::create(std::move(o));
  ASSERT_FALSE(rt.is_ok());
  EXPECT_EQ(rt.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(rt.status().message().find("make_executor"), std::string::npos) << rt.status().to_string();

  RuntimeOptions none;  // a factory that makes nothing: refused at start too
  none.config = fast_config();
  none.transport = std::make_shared<fake::FakeTransportProvider>(world, 0);
  none.backends.push_back(std::make_shared<fake::FakeBackendProvider>(world, 0));
  none.make_executor = [](const ExecutorParts&) { return std::unique_ptr<ResponseExecutor>(); };
  Result<std::unique_ptr<Runtime>> empty = Runtime::create(std::move(none));
  ASSERT_FALSE(empty.is_ok());
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(empty.status().message().find("make_executor"), std::string::npos) << empty.status().to_string();
}

TEST(Engine, StaticAndDynamicProcessSets) {
  const int n = 3;
  auto world = std::make_shared<fake::FakeWorld>(n);
  Config c = fast_config();
  c.dynamic_process_sets = true;
  run_ranks(n, [&](int rank) {
    auto rt = make_fake_runtime(world, rank, c, {{0, 2}});
    EXPECT_EQ(rt->process_set_ids(), (std::vector<int>{0, 1}));
    std::vector<float> x(1, static_cast<float>(rank));
    if (rank != 1) {
      ASSERT_TRUE(rt->wait(*rt->allreduce("ps", f32(x), f32(x), ReduceOp::kSum, 1, 1, 1)).is_ok());
      EXPECT_EQ(x[0], 2.f);
    } else {
      EXPECT_FALSE(rt->allreduce("ps", f32(x), f32(x), ReduceOp::kSum, 1, 1, 1).is_ok());
    }
    Result<int> id = rt->add_process_set({1, 2});
    ASSERT_TRUE(id.is_ok()) << id.status().to_string();
    EXPECT_EQ(*id, 2);
    if (rank != 0) {
      std::vector<float> y(1, 1.f);
      ASSERT_TRUE(rt->wait(*rt->allreduce("dyn", f32(y), f32(y), ReduceOp::kSum, 1, 1, *id)).is_ok());
      EXPECT_EQ(y[0], 2.f);
    }
    EXPECT_TRUE(rt->remove_process_set(*id).is_ok());
    EXPECT_EQ(rt->process_set_ids(), (std::vector<int>{0, 1}));
    EXPECT_TRUE(rt->shutdown().is_ok());
  });
}

// Unnamed ops are named by their set's own count: ranks 0 and 2 run unnamed ops on their set that
// rank 1 never sees, and the next unnamed op on the global set still has one name on every rank
// (named by each rank's handle count it was allreduce.noname.3 on ranks 0 and 2, .0 on rank 1,
// and stalled). A disagreement on it shows the name every rank used.
TEST(Engine, UnnamedOpsAreNamedPerProcessSetSoRanksAgree) {
  const int n = 3;
  auto world = std::make_shared<fake::FakeWorld>(n);
  Config c = fast_config();
  c.stall_warning_seconds = 0.1;
  c.stall_shutdown_seconds = 1.0;
  run_ranks(n, [&](int rank) {
    auto rt = make_fake_runtime(world, rank, c, {{0, 2}});
    std::vector<float> x(2, 1.f);
    if (rank != 1) {
      for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(rt->wait(*rt->allreduce("", f32(x), f32(x), ReduceOp::kSum, 1, 1, 1)).is_ok());
      }
    }
    std::vector<float> y(2, static_cast<float>(rank));
    Status s = rt->wait(*rt->allreduce("", f32(y), f32(y), ReduceOp::kSum));
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    EXPECT_EQ(y[0], 3.f);
    std::vector<float> z(1 + rank % 2, 0.f);
    s = rt->wait(*rt->allreduce("", f32(z), f32(z), ReduceOp::kSum));
    EXPECT_EQ(s.code(), StatusCode::kPreconditionError) << s.to_string();
    EXPECT_NE(s.message().find("allreduce.noname.1"), std::string::npos) << s.message();
    EXPECT_TRUE(rt->shutdown().is_ok());
  });
}

// As in Horovod, whose global set holds every rank once initialized (process_set.cc), a dynamic
// set of every rank is a duplicate of the global set (Horovod's
// test_tensorflow_process_sets_dynamic.py expects ValueError); adding the same ranks twice too.
TEST(Engine, ADynamicSetOfEveryRankIsADuplicateOfTheGlobalSet) {
  const int n = 2;
  auto world = std::make_shared<fake::FakeWorld>(n);
  Config c = fast_config();
  c.dynamic_process_sets = true;
  run_ranks(n, [&](int rank) {
    auto rt = make_fake_runtime(world, rank, c, {});
    Result<int> all = rt->add_process_set({1, 0});
    ASSERT_FALSE(all.is_ok());
    EXPECT_EQ(all.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(all.status().message().find("exists (id 0, the global set)"), std::string::npos)
        << all.status().message();
    Result<int> one = rt->add_process_set({0});  // every rank adds the same set
    ASSERT_TRUE(one.is_ok()) << one.status().to_string();
    EXPECT_FALSE(rt->add_process_set({0}).is_ok());
    std::vector<float> x(1, static_cast<float>(rank + 1));
    ASSERT_TRUE(rt->wait(*rt->allreduce("all", f32(x), f32(x), ReduceOp::kSum, 1, 1, kGlobalProcessSet)).is_ok());
    EXPECT_EQ(x[0], 3.f);
    EXPECT_TRUE(rt->remove_process_set(*one).is_ok());
    EXPECT_TRUE(rt->shutdown().is_ok());
  });
}

}  // namespace
}  // namespace korovod
