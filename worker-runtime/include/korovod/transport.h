// Extension seams. A TransportProvider gives the engine its control plane (negotiation);
// BackendProviders give it data planes (the collectives on tensor memory). The engine knows
// only these interfaces: MPI lives in src/transport/mpi/, shared memory in shm/, NCCL (GPU
// tensors) in nccl/, TCP (data plane, and control plane without MPI) in tcp/, the in-memory fake
// used by unit tests in fake/; the first enabled backend wins, as in Horovod's op manager.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "korovod/status.h"
#include "korovod/types.h"

namespace korovod {

struct WorldInfo {
  int rank = 0, size = 1;
  int local_rank = 0, local_size = 1;
  int cross_rank = 0, cross_size = 1;
  bool homogeneous = true;  // same local_size on every node
  int64_t elastic_round = 0;  // elastic mode: the driver's round this world formed in; 0 = not elastic
};

enum class BitwiseOp { kAnd, kOr };

// Control plane of one process set: small collectives among its members, called only from the
// runtime's background thread, in the same order on every member.
class ControlChannel {
 public:
  virtual ~ControlChannel() = default;
  virtual int rank() const = 0;  // rank within the process set
  virtual int size() const = 0;
  virtual Status allreduce_bits(std::vector<uint64_t>& bits, BitwiseOp op) = 0;
  // Every member sends `mine`; the set's rank 0 gets all of them in rank order, others get {}.
  virtual Result<std::vector<std::string>> gather_to_root(const std::string& mine) = 0;
  // The set's rank 0 sends `bytes`; every other member receives it into `bytes`.
  virtual Status broadcast_from_root(std::string& bytes) = 0;
  // Optional, as Backend::interrupt_wait.
  virtual bool interrupt_wait(const std::string& why) {
    (void)why;
    return false;
  }
  // Optional, for a channel whose waits cannot be interrupted (MPI): the engine's watchdog, from
  // its own thread, once the background loop's collective ran past the collective timeout and no
  // plane could end it naming a peer. Every rank whose loop is stuck asks the same at about the
  // same time (each from its own watchdog); this sends each peer a probe, listens for theirs for
  // `window_seconds`, and returns the peers that sent none ("lost rank 2 on host h (…)"), or ""
  // when it cannot tell (every peer answered, or the channel cannot probe).
  virtual std::string silent_peers(double window_seconds) {
    (void)window_seconds;
    return {};
  }
};

class TransportProvider {
 public:
  virtual ~TransportProvider() = default;
  virtual std::string name() const = 0;
  virtual WorldInfo world() const = 0;
  // Collective among `global_ranks` (sorted, includes the caller); `set_id` is the same on all.
  virtual Result<std::unique_ptr<ControlChannel>> create_control(const std::vector<int>& global_ranks,
                                                                 int set_id) = 0;
  // Last resort after a collective timed out: tear the job down (MPI_Abort). May not return.
  virtual void abort_job(int exit_code) = 0;
  // What errors call a rank: "rank 3", or with its host where the transport knows it ("rank 3
  // on host worker-1"), so that the error of a lost peer says where to look.
  virtual std::string rank_name(int global_rank) const;
};

// Data plane of one process set. Counts are elements of `dtype` unless named *_bytes. In-place
// when send == recv. Implementations run on the background thread only.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;           // "MPI", "NCCL", "TCP"
  virtual bool enabled(int device) const = 0;     // can this backend run tensors on `device`?
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual Status allreduce(const void* send, void* recv, int64_t count, DataType dtype, ReduceOp op) = 0;
  virtual Status allgatherv(const void* send, int64_t send_bytes, void* recv,
                            const std::vector<int64_t>& recv_bytes) = 0;  // displs = prefix sums
  virtual Status broadcast(void* buffer, int64_t bytes, int root) = 0;
  virtual Status alltoallv(const void* send, const std::vector<int64_t>& send_bytes, void* recv,
                           const std::vector<int64_t>& recv_bytes) = 0;  // displs = prefix sums
  virtual Status reducescatter(const void* send, void* recv, const std::vector<int64_t>& recv_counts,
                               DataType dtype, ReduceOp op) = 0;
  virtual Status barrier() = 0;

  // For device tensors (a backend enabled for device >= 0) the host cannot touch the memory, so
  // the algorithms hand Horovod's scaling and their copies to the backend:
  // recv = postscale * op(prescale * send), Average dividing by size. Host backends keep the
  // defaults (src/core/backend.cc): the scaled calls refuse, copy is memcpy.
  virtual Status allreduce_scaled(const void* send, void* recv, int64_t count, DataType dtype, ReduceOp op,
                                  double prescale, double postscale);
  virtual Status reducescatter_scaled(const void* send, void* recv, const std::vector<int64_t>& recv_counts,
                                      DataType dtype, ReduceOp op, double prescale, double postscale);
  virtual Status copy(void* dst, const void* src, int64_t bytes);

  // Optional, for a device backend that moves its tensors through host memory (host staging,
  // src/transport/common/staging_backend.h): once every backend of a process set exists, each
  // other backend is handed the one the set's CPU tensors use. `host` belongs to the same set
  // and outlives this backend's collectives. The default ignores it.
  virtual void attach_host_plane(Backend& host) { (void)host; }
  // Optional: what rank 0's startup line says about this data plane when its provider's
  // description does not say enough (host staging says why it was chosen); "" = the provider's.
  virtual std::string description() const { return {}; }

  // Optional: one allreduce over the tensors of a fused response, each read from its input and
  // written to its output in place rather than packed into and out of the fusion buffer:
  // recvs[i] = postscale * op(sends[i] of every rank), counts[i] elements each (recvs[i] may be
  // sends[i]); the same fused layout on every member. A host backend that offers it returns
  // true from allreduce_many_offered(); the default offers nothing and refuses.
  virtual bool allreduce_many_offered() const { return false; }
  virtual Status allreduce_many(const std::vector<const void*>& sends, const std::vector<void*>& recvs,
                                const std::vector<int64_t>& counts, DataType dtype, ReduceOp op, double postscale);

  // Optional: the negotiation's bit-vector allreduce (ControlChannel::allreduce_bits) on this
  // data plane, for vectors of up to this many words; 0 = not offered (the default). Shared
  // memory offers it: a few cache lines instead of a control-plane collective per cycle. Same
  // contract as the control channel's: called on every member in the same order.
  virtual size_t bits_allreduce_words() const { return 0; }
  virtual Status allreduce_bits(std::vector<uint64_t>& bits, BitwiseOp op);

  // Optional: how an idle engine sleeps, offered by a data plane that offers allreduce_bits
  // (shared memory). The engine takes idle_token(), checks its own work, then calls
  // idle_wait(token, timeout), which returns once idle_wake() was called after the token (by any
  // thread of this rank), once another member has started a negotiation round this rank has not
  // joined (control_round_pending()), or after the timeout; a member that starts a round wakes
  // the members asleep there. Unlike the rest of the interface, these five may be called from
  // any thread, while another runs this backend's collectives. The defaults offer nothing: the
  // engine then cycles on its timer.
  virtual bool offers_idle_wait() const { return false; }
  virtual uint64_t idle_token() const { return 0; }
  virtual void idle_wait(uint64_t token, double timeout_seconds) { (void)token, (void)timeout_seconds; }
  virtual void idle_wake() {}
  virtual bool control_round_pending() const { return false; }

  // Optional: the pipelining unit of this backend's own collectives (autotune's chunk axis);
  // 0 = back to its configured unit. Called on every member between the same two collectives;
  // a backend clamps it to what its buffers allow. The default ignores it (MPI, NCCL, TCP).
  virtual void set_chunk_bytes(int64_t bytes) { (void)bytes; }

  // Optional: the engine's watchdog, from its own thread, once a collective ran past
  // KOROVOD_COLLECTIVE_TIMEOUT_SECONDS. A plane that knows which peers its collectives wait for
  // ends the wait in progress (and fails every later one) with an error that starts with `why`
  // and names the peers that never answered; it returns true when a wait was in progress or the
  // plane has failed already (that error is on its way), so the engine fails with that error
  // rather than its own, which names no rank. Any thread, while
  // another runs this plane's collectives (TCP, shared memory). The default (MPI, NCCL, whose
  // waits cannot be interrupted) does nothing.
  virtual bool interrupt_wait(const std::string& why) {
    (void)why;
    return false;
  }
};

class BackendProvider {
 public:
  virtual ~BackendProvider() = default;
  virtual std::string name() const = 0;
  // For the rank-0 startup line: name plus version and what it found ("NCCL 2.23.4, 2 GPUs").
  virtual std::string description() const { return name(); }
  virtual Result<std::unique_ptr<Backend>> create_backend(const std::vector<int>& global_ranks,
                                                          int set_id) = 0;
};

}  // namespace korovod
