// Self-checking multi-rank test under mpirun: every failed check prints the rank, the line and
// what differed; main() agrees on the verdict over MPI and exits non-zero if any rank failed.
#pragma once

#include <fmt/format.h>

#include <memory>
#include <string>

#include "korovod/mpi.h"

namespace korovod::mpitest {

class Checker {
 public:
  explicit Checker(int rank) : rank_(rank) {}
  bool check(bool ok, const char* file, int line, const std::string& what) {
    if (!ok) {
      ++failures_;
      fmt::print(stderr, "[rank {}] CHECK FAILED {}:{}: {}\n", rank_, file, line, what);
    }
    return ok;
  }
  int failures() const { return failures_; }
  int rank() const { return rank_; }

 private:
  int rank_;
  int failures_ = 0;
};

// The condition is evaluated before the message: its arguments often read the buffers the
// condition waits for (an argument of one call is not ordered against another, and TSan caught
// a message reading an output the runtime was still writing).
#define MPI_CHECK(checker, cond, ...)                                   \
  [&]() {                                                               \
    const bool mpi_check_ok_ = (cond);                                  \
    return (checker).check(mpi_check_ok_, __FILE__, __LINE__, fmt::format(__VA_ARGS__)); \
  }()

std::unique_ptr<Runtime> make_runtime(Config config, std::vector<std::vector<int>> sets = {});
Config test_config();

void check_collectives(Runtime& rt, Checker& c);      // every op x dtype x size
void check_grouped_async_join(Runtime& rt, Checker& c);
void check_process_sets(Runtime& rt, Checker& c);
void check_mismatch_errors(Runtime& rt, Checker& c);
void check_stall(Runtime& rt, Checker& c);
void check_idle_and_late_ranks(Runtime& rt, Checker& c);
void check_group_reuse(Runtime& rt, Checker& c);  // mpi_waits_check.cc
void check_timed_waits(Runtime& rt, Checker& c);
void check_waits_in_slices(Runtime& rt, Checker& c);
double process_cpu_ms();              // this process's user + system CPU so far
double max_over_ranks(double mine);
void check_timeline(Runtime& rt, Checker& c, const std::string& path);
void check_startup_line(Checker& c, int size);

}  // namespace korovod::mpitest
