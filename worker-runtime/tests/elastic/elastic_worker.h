// The worker of rt_elastic_chaos (see elastic_worker.cc).
#pragma once

#include <cstdint>

namespace korovod::chaos {

struct WorkerArgs {
  int steps = 5;                 // checked allreduces per round
  int64_t until_lost_round = 0;  // in this round, allreduces until one fails (a peer is killed)
  int64_t last_round = 1;        // exit after completing (or being removed from) this round
  int floats = 1 << 18;          // allreduce size: 1 MiB, so a kill usually lands mid-collective
  // In round until_lost_round, the worker of this rank holds back its first allreduce (it sleeps
  // until the driver kills it): the others wait for it, idle, with that allreduce submitted.
  int hold_rank = -1;
};

// Environment: what the elastic driver gives a worker (docs/elastic.md). Exit status 0 when every
// round went as expected and nothing leaked.
int run_worker(const WorkerArgs& args);

}  // namespace korovod::chaos
