// The watchdog's account of where a stuck cycle stopped (core/cycle_trace.h).
#include "core/cycle_trace.h"

#include <gtest/gtest.h>

namespace korovod {
namespace {

ResponsePtr fused_allreduce() {
  Response r;
  r.type = ResponseType::kAllreduce;
  r.dtype = DataType::kFloat32;
  r.names = {"grad/dense", "grad/bias", "grad/conv"};
  r.sizes = {1280, 10, 288};
  return std::make_shared<const Response>(std::move(r));
}

TEST(CycleTrace, SaysNothingOutsideACycle) {
  CycleTrace trace;
  EXPECT_EQ(trace.describe(), "");
  trace.begin_set(0, 7);
  trace.end_cycle();
  EXPECT_EQ(trace.describe(), "");
}

TEST(CycleTrace, NamesTheNegotiationStep) {
  CycleTrace trace;
  trace.begin_set(2, 41);
  EXPECT_EQ(trace.describe(), "cycle 41 of process set 2, negotiating");
  trace.step("gathering the requests at the coordinator");
  EXPECT_EQ(trace.describe(), "cycle 41 of process set 2, negotiating: gathering the requests at the coordinator");
}

TEST(CycleTrace, NamesTheResponseItRunsWithItsSize) {
  CycleTrace trace;
  trace.begin_set(0, 812);
  trace.step("exchanging the status and cache bits");
  trace.response(fused_allreduce());  // the negotiation is over
  EXPECT_EQ(trace.describe(),
            "cycle 812 of process set 0, running ALLREDUCE of 'grad/dense' and 2 more tensors (float32, 1578 elements)");
  Response gather;
  gather.type = ResponseType::kAllgather;
  gather.dtype = DataType::kInt64;
  gather.names = {"ids"};
  gather.sizes = {3, 5};  // rows per rank: no element count is claimed
  trace.response(std::make_shared<const Response>(gather));
  EXPECT_EQ(trace.describe(), "cycle 812 of process set 0, running ALLGATHER of 'ids' (int64)");
  trace.begin_set(1, 3);  // the next set's negotiation forgets the response
  EXPECT_EQ(trace.describe(), "cycle 3 of process set 1, negotiating");
}

}  // namespace
}  // namespace korovod
