// Open MPI state of one Runtime: initialisation (MPI_THREAD_MULTIPLE when korovod initialises
// MPI itself), a private duplicate of the caller's communicator (or a communicator of some of its
// ranks), node topology and the custom float16/bfloat16 reduction ops.
//
// MPI is never finalized when a Runtime ends: MPI cannot be initialised twice in a process, and
// a process may start another Runtime after shutting one down (Horovod's init -> shutdown ->
// init). When korovod initialised MPI it finalizes it at process exit (atexit); MPI that someone
// else initialised (the program, mpi4py) is theirs to finalize.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "korovod/transport.h"

namespace korovod::mpi {

class MpiContext {
 public:
  // `comm` null: MPI_COMM_WORLD. threads_disable: ask for MPI_THREAD_SERIALIZED only.
  // `comm_ranks` non-empty: run on a new communicator of these ranks of `comm` only (Horovod's
  // init(comm=[ranks])); the other ranks get an InvalidArgument error and join no collective.
  // `host_name`: what the other ranks' errors call this rank's host ("" = MPI_Get_processor_name).
  static Result<std::shared_ptr<MpiContext>> create(const MPI_Comm* comm, bool threads_disable,
                                                    const std::vector<int>& comm_ranks = {},
                                                    const std::string& host_name = {});
  ~MpiContext();
  MpiContext(const MpiContext&) = delete;
  MpiContext& operator=(const MpiContext&) = delete;

  const WorldInfo& info() const { return info_; }
  MPI_Comm comm() const { return comm_; }
  bool threads_multiple() const { return provided_ == MPI_THREAD_MULTIPLE; }
  // "rank 3 on host h" (MPI_Get_processor_name of each rank of comm(), gathered at create()).
  std::string rank_name(int rank) const;
  // A new communicator for `ranks` (ranks of comm(), sorted); collective among them.
  Result<MPI_Comm> create_subcomm(const std::vector<int>& ranks, int tag) const;
  // MPI datatype and op for a dtype/op pair; float16/bfloat16 use korovod's user ops and bool
  // reduces as logic on bytes.
  MPI_Datatype datatype(DataType dtype) const;
  MPI_Op op(DataType dtype, ReduceOp op) const;
  void abort(int code) const { MPI_Abort(comm_, code); }

 private:
  MpiContext() = default;
  Status init_topology(const std::string& host_name);
  void create_half_ops();

  int provided_ = MPI_THREAD_SINGLE;
  MPI_Comm comm_ = MPI_COMM_NULL;
  WorldInfo info_;
  std::vector<std::string> hosts_;  // by rank of comm_
  MPI_Op half_ops_[2][4] = {};  // [float16, bfloat16][sum, min, max, product]
  bool half_ops_created_ = false;  // a failed create() destroys a context without them
};

Status mpi_status(int code, const char* what);

}  // namespace korovod::mpi
