// korovod-bench's second peer: Gloo (Debian's libgloo-dev), the library Horovod's Gloo
// controller calls. Ring allreduce (gloo::allreduce with AllreduceOptions::RING, as Horovod's
// gloo_operations.cc) over Gloo's TCP transport on loopback; the ranks meet through a
// gloo::rendezvous::FileStore in a temporary directory whose name rank 0 broadcasts over MPI.
// Gloo reports failures by throwing; they are caught here and turned into Status values.
#pragma once

#include <memory>

#include "korovod/status.h"
#include "korovod/types.h"

namespace gloo {
class Context;
}

namespace korovod::bench {

class GlooPeer {
 public:
  // Collective over MPI_COMM_WORLD: every rank calls it.
  static Result<std::unique_ptr<GlooPeer>> connect(int rank, int size);
  ~GlooPeer();
  // send -> recv (distinct buffers), `count` elements of `dtype`.
  Status allreduce(const void* send, void* recv, int64_t count, DataType dtype, ReduceOp op);

 private:
  explicit GlooPeer(std::shared_ptr<gloo::Context> context);
  std::shared_ptr<gloo::Context> context_;
  uint32_t tag_ = 0;
};

}  // namespace korovod::bench
