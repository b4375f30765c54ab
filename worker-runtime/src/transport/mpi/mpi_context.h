// Open MPI state of one Runtime: initialisation (MPI_THREAD_MULTIPLE when korovod initialises
// MPI itself), a private duplicate of the caller's communicator, node topology, the custom
// float16/bfloat16 reduction ops, and finalisation when korovod did the initialisation.
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
  static Result<std::shared_ptr<MpiContext>> create(const MPI_Comm* comm, bool threads_disable);
  ~MpiContext();
  MpiContext(const MpiContext&) = delete;
  MpiContext& operator=(const MpiContext&) = delete;

  const WorldInfo& info() const { return info_; }
  MPI_Comm comm() const { return comm_; }
  bool threads_multiple() const { return provided_ == MPI_THREAD_MULTIPLE; }
  // A new communicator for `ranks` (ranks of comm(), sorted); collective among them.
  Result<MPI_Comm> create_subcomm(const std::vector<int>& ranks, int tag) const;
  // MPI datatype and op for a dtype/op pair; float16/bfloat16 use korovod's user ops and bool
  // reduces as logic on bytes.
  MPI_Datatype datatype(DataType dtype) const;
  MPI_Op op(DataType dtype, ReduceOp op) const;
  void abort(int code) const { MPI_Abort(comm_, code); }

 private:
  MpiContext() = default;
  Status init_topology();
  void create_half_ops();

  bool we_initialized_ = false;
  int provided_ = MPI_THREAD_SINGLE;
  MPI_Comm comm_ = MPI_COMM_NULL;
  WorldInfo info_;
  MPI_Op half_ops_[2][4] = {};  // [float16, bfloat16][sum, min, max, product]
};

Status mpi_status(int code, const char* what);

}  // namespace korovod::mpi
