// What the executor (algorithms/executor.h) hands the collectives (algorithms/algorithm.h): each
// tensor of a response as this rank executes it, and where the rank's process set lies on the
// hosts. The engine never sees these: it hands the executor whole responses
// (core/response_executor.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "korovod/runtime.h"
#include "korovod/types.h"

namespace korovod {

// One tensor of a (possibly fused) response, as this rank executes it. A joined rank has no
// tensor of its own: `dummy` holds the zeros it contributes.
struct OpEntry {
  std::string name;
  TensorView input;  // shape: alltoall only (others' went to the request; see make_entry)
  TensorView output;
  std::vector<int32_t> splits;
  OutputAllocator allocator;
  std::shared_ptr<const ReadyEvent> ready_event;
  Handle handle = 0;
  bool joined_dummy = false;
  std::vector<std::byte> dummy;
  OpOutput result;  // filled by the algorithm
};

// Where this rank's process set lies on the hosts, for an algorithm that reduces within each
// host first (Adasum of GPU tensors, as Horovod's NCCL build computes it).
struct SetLayout {
  bool global = false;       // the global process set (whose ranks are the world's)
  int local_size = 1;        // ranks on this rank's host
  bool homogeneous = true;   // every host runs local_size ranks
  bool contiguous = true;    // rank == cross_rank * local_size + local_rank, for this rank
};

}  // namespace korovod
