// Horovod's join rule (its controller's ConstructResponse): while any rank of the set has joined,
// only allreduce runs (joined ranks contribute zeros); allgather, broadcast, alltoall,
// reducescatter and barrier fail on the ranks that submitted them, naming the joined ranks
// (Horovod's test_horovod_join_allgather / _broadcast expect an error on the non-joined ranks).
// The engine over the fake transport, N ranks as N threads.
#include <gtest/gtest.h>

#include "core/testing/test_ranks.h"
#include "korovod/runtime.h"
#include "transport/fake/fake_ranks.h"
#include "transport/fake/fake_world.h"

namespace korovod {
namespace {

TensorView f32(std::vector<float>& v) {
  return TensorView{v.data(), DataType::kFloat32, {static_cast<int64_t>(v.size())}, kCpuDevice};
}

// Rank n-1 joins first; the others run `type` (expecting the join error), then an allreduce
// (which must still work), then join.
void expect_refused_while_joined(RequestType type, int root_rank) {
  const int n = 3;
  auto world = std::make_shared<fake::FakeWorld>(n);
  testing::run_ranks(n, [&](int rank) {
    auto rt = testing::make_fake_runtime(world, rank);
    ASSERT_TRUE(rt);
    if (rank == n - 1) {
      auto j = rt->join();
      ASSERT_TRUE(j.is_ok());
      EXPECT_TRUE(rt->wait(*j).is_ok());
    } else {
      std::vector<float> x(6, static_cast<float>(rank + 1)), out(6);
      CollectiveArgs a;
      a.type = type;
      a.name = "while_joined";
      a.input = f32(x);
      a.output = type == RequestType::kBroadcast ? f32(x) : TensorView{};
      a.root_rank = root_rank;
      Result<Handle> h = rt->enqueue(std::move(a));
      ASSERT_TRUE(h.is_ok()) << h.status().to_string();
      Status s = rt->wait(*h);
      EXPECT_EQ(s.code(), StatusCode::kPreconditionError) << request_type_name(type) << ": " << s.to_string();
      EXPECT_NE(s.message().find("while ranks [2] have joined"), std::string::npos) << s.message();
      // The runtime stays usable: an allreduce with the joined rank contributing zeros.
      auto r = rt->allreduce("after", f32(x), f32(out), ReduceOp::kSum);
      ASSERT_TRUE(r.is_ok());
      ASSERT_TRUE(rt->wait(*r).is_ok());
      EXPECT_FLOAT_EQ(out[0], 3.f);  // 1 + 2 + 0
      EXPECT_TRUE(rt->wait(*rt->join()).is_ok());
    }
    EXPECT_TRUE(rt->shutdown().is_ok());
  });
}

TEST(JoinRule, AllgatherFailsWhileARankHasJoined) { expect_refused_while_joined(RequestType::kAllgather, 0); }

TEST(JoinRule, BroadcastFromALiveRootFailsWhileARankHasJoined) {
  expect_refused_while_joined(RequestType::kBroadcast, 0);
}

TEST(JoinRule, BroadcastFromTheJoinedRootFails) { expect_refused_while_joined(RequestType::kBroadcast, 2); }

TEST(JoinRule, AlltoallAndReducescatterFailWhileARankHasJoined) {
  expect_refused_while_joined(RequestType::kAlltoall, 0);
  expect_refused_while_joined(RequestType::kReducescatter, 0);
}

// A process set change needs every rank, and a joined rank waits in join() until all join: the
// others' add_process_set would wait forever (Horovod's does). It fails instead, naming join, and
// the ranks can then join and add the set afterwards.
TEST(JoinRule, AddProcessSetFailsWhileARankHasJoined) {
  const int n = 3;
  auto world = std::make_shared<fake::FakeWorld>(n);
  Config c = testing::fast_config();
  c.dynamic_process_sets = true;
  testing::run_ranks(n, [&](int rank) {
    auto rt = testing::make_fake_runtime(world, rank, c);
    ASSERT_TRUE(rt);
    if (rank == n - 1) {
      EXPECT_TRUE(rt->wait(*rt->join()).is_ok());
    } else {
      Result<int> id = rt->add_process_set({0, 1});
      EXPECT_EQ(id.status().code(), StatusCode::kPreconditionError) << id.status().to_string();
      EXPECT_NE(id.status().message().find("join()"), std::string::npos) << id.status().message();
      EXPECT_TRUE(rt->wait(*rt->join()).is_ok());
    }
    Result<int> after = rt->add_process_set({0, 1});  // every rank, none joined
    ASSERT_TRUE(after.is_ok()) << after.status().to_string();
    EXPECT_EQ(*after, 1);
    EXPECT_TRUE(rt->shutdown().is_ok());
  });
}

}  // namespace
}  // namespace korovod
