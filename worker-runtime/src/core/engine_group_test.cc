// Grouped collectives through the whole engine (Runtime), N ranks as N threads over the fake
// transport: a group submitted again under the same names with another shape, dtype or number
// of members completes with the right values (it used to hang: the unchanged members came from
// the response cache while the coordinator held the changed one for them).
#include <gtest/gtest.h>

#include "core/testing/test_ranks.h"
#include "korovod/runtime.h"
#include "transport/fake/fake_ranks.h"
#include "transport/fake/fake_world.h"

namespace korovod {
namespace {

using testing::fast_config;
using testing::make_fake_runtime;
using testing::run_ranks;

struct Member {
  int64_t count;
  DataType dtype = DataType::kFloat32;
};

// A grouped sum over "g.<i>" of every member, each filled with rank + 1 (as float or double);
// every output must come back as 1 + 2 + ... + n within a few seconds.
void grouped_sum(Runtime& rt, int rank, int n, const std::vector<Member>& members) {
  std::vector<std::vector<double>> f64(members.size());
  std::vector<std::vector<float>> f32(members.size());
  std::vector<std::string> names;
  std::vector<TensorView> in, out;
  for (size_t i = 0; i < members.size(); ++i) {
    const Member& m = members[i];
    names.push_back("g." + std::to_string(i));
    void* data = nullptr;
    if (m.dtype == DataType::kFloat64) {
      f64[i].assign(static_cast<size_t>(m.count), rank + 1.0);
      data = f64[i].data();
    } else {
      f32[i].assign(static_cast<size_t>(m.count), rank + 1.f);
      data = f32[i].data();
    }
    in.push_back(TensorView{data, m.dtype, {m.count}, kCpuDevice});
    out.push_back(in.back());
  }
  Result<std::vector<Handle>> hs = rt.grouped_allreduce(names, in, out, ReduceOp::kSum, 1.0, 1.0);
  ASSERT_TRUE(hs.is_ok()) << hs.status().to_string();
  for (Handle h : *hs) {
    Status st = rt.wait_for(h, 10.0);
    ASSERT_TRUE(st.is_ok()) << "rank " << rank << ": " << st.to_string();
  }
  const double expect = n * (n + 1) / 2.0;
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i].dtype == DataType::kFloat64) {
      for (double v : f64[i]) ASSERT_EQ(v, expect) << names[i];
    } else {
      for (float v : f32[i]) ASSERT_EQ(v, static_cast<float>(expect)) << names[i];
    }
  }
}

TEST(EngineGroups, GroupReusedUnderItsNamesWithOtherShapesDtypesAndMembers) {
  const int n = 3;
  auto world = std::make_shared<fake::FakeWorld>(n);
  run_ranks(n, [&](int rank) {
    auto rt = make_fake_runtime(world, rank, fast_config(20));
    ASSERT_TRUE(rt);
    for (const std::vector<Member>& g : std::vector<std::vector<Member>>{
             {{3}, {2}},                          // negotiated, then cached
             {{3}, {2}},                          // from the cache
             {{3}, {5}},                          // one member's shape changed
             {{3}, {5, DataType::kFloat64}},      // one member's dtype changed
             {{3}, {5, DataType::kFloat64}, {4}}, // one member more
             {{3}, {5, DataType::kFloat64}},      // one member fewer
             {{7}, {5, DataType::kFloat64}}}) {   // the other member changed
      grouped_sum(*rt, rank, n, g);
      if (::testing::Test::HasFatalFailure()) break;
    }
    EXPECT_TRUE(rt->shutdown().is_ok());
  });
}

}  // namespace
}  // namespace korovod
