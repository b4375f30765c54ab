// rt_capi_check: the C ABI with several ranks, one process per rank, the way the Python package
// drives it (it includes only korovod/c_api.h, plus DLPack's struct layout to read outputs, and
// links only libkorovod.so: under mpirun, MPI comes from libkorovod_mpi.so through the loader).
// Each check runs on every rank in the same order; a failed check is printed and counted, and
// the ranks carry on in step so no rank waits forever on one that gave up.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <vector>

#include "korovod/c_api.h"

namespace korovod::capi_check {

class Checker {
 public:
  explicit Checker(int rank) : rank_(rank) {}
  void set_rank(int rank) { rank_ = rank; }
  template <typename... Args>
  bool check(bool ok, fmt::format_string<Args...> what, Args&&... args) {
    if (!ok) {
      ++failures_;
      fmt::print(stderr, "CAPI-CHECK-FAIL rank {}: {}\n", rank_, fmt::format(what, std::forward<Args>(args)...));
    }
    return ok;
  }
  int failures() const { return failures_; }

 private:
  int rank_;
  int failures_ = 0;
};

// One korovod_enqueue call with defaults.
struct Op {
  int type = KOROVOD_OP_ALLREDUCE;
  std::string name;
  void* input = nullptr;
  void* output = nullptr;
  int dtype = KOROVOD_FLOAT32;
  std::vector<int64_t> shape;
  int op = KOROVOD_SUM;
  double prescale = 1.0, postscale = 1.0;
  int root_rank = 0;
  std::vector<int32_t> splits;
  int process_set = 0;

  int64_t enqueue(korovod_runtime* rt) const;
  int add_to(korovod_group* group) const;
};

// Enqueue + wait; the code (0 or the error) and, on failure, the text.
struct Outcome {
  int64_t handle = 0;
  int code = 0;
  std::string error;
};
Outcome run(korovod_runtime* rt, const Op& op, bool release = true);

// A runtime-allocated output as values of T (taken as DLPack; shape into *shape).
template <typename T>
std::vector<T> take_output(korovod_runtime* rt, int64_t handle, int dl_code, std::vector<int64_t>* shape, Checker& c);

void check_allreduce(korovod_runtime* rt, Checker& c);
void check_allgather_broadcast_alltoall_reducescatter(korovod_runtime* rt, Checker& c);
void check_groups(korovod_runtime* rt, Checker& c);
void check_enqueue_many(korovod_runtime* rt, Checker& c);  // capi_check_batch.cc
void check_errors(korovod_runtime* rt, Checker& c);
void check_process_sets(korovod_runtime* rt, Checker& c, int static_sets);
void check_join_rule(korovod_runtime* rt, Checker& c);
// An allgather output taken as DLPack, to be read after the runtime is destroyed (a
// DLManagedTensor*, and what it must hold).
void* gather_for_later(korovod_runtime* rt, Checker& c, std::vector<float>* expect);
void check_later(void* managed, const std::vector<float>& expect, Checker& c);

}  // namespace korovod::capi_check
