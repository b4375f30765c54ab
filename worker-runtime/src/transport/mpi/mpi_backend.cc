// CPU data plane on MPI. Like Horovod, the algorithm is MPI's: MPI_Allreduce on the fused
// buffer, MPI_Allgatherv, MPI_Bcast, MPI_Alltoallv, MPI_Reduce_scatter.
#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <numeric>

#include "transport/mpi/mpi_providers.h"

namespace korovod::mpi {
namespace {

Result<std::vector<int>> to_int_counts(const std::vector<int64_t>& counts, std::vector<int>* displs) {
  std::vector<int> out;
  int64_t offset = 0;
  for (int64_t c : counts) {
    if (offset + c > INT_MAX) return Status::invalid_argument("MPI backend: more than INT_MAX bytes in one collective");
    out.push_back(static_cast<int>(c));
    if (displs) displs->push_back(static_cast<int>(offset));
    offset += c;
  }
  return out;
}

class MpiBackend final : public Backend {
 public:
  MpiBackend(std::shared_ptr<MpiContext> ctx, MPI_Comm comm) : ctx_(std::move(ctx)), comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~MpiBackend() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }
  std::string name() const override { return "MPI"; }
  bool enabled(int device) const override { return device == kCpuDevice; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Status allreduce(const void* send, void* recv, int64_t count, DataType dtype, ReduceOp op) override {
    const int64_t elem = element_size(dtype);
    for (int64_t done = 0; done < count;) {  // INT_MAX-element chunks; count is equal on all ranks
      const int n = static_cast<int>(std::min<int64_t>(count - done, INT_MAX));
      const void* s = send == recv ? MPI_IN_PLACE : static_cast<const char*>(send) + done * elem;
      void* r = static_cast<char*>(recv) + done * elem;
      KOROVOD_RETURN_IF_ERROR(mpi_status(
          MPI_Allreduce(s, r, n, ctx_->datatype(dtype), ctx_->op(dtype, op), comm_), "MPI_Allreduce"));
      done += n;
    }
    return Status::ok();
  }

  Status allgatherv(const void* send, int64_t send_bytes, void* recv, const std::vector<int64_t>& recv_bytes) override {
    std::vector<int> displs;
    Result<std::vector<int>> counts = to_int_counts(recv_bytes, &displs);
    if (!counts.is_ok()) return counts.status();
    return mpi_status(MPI_Allgatherv(send, static_cast<int>(send_bytes), MPI_BYTE, recv, counts->data(),
                                     displs.data(), MPI_BYTE, comm_), "MPI_Allgatherv");
  }

  Status broadcast(void* buffer, int64_t bytes, int root) override {
    if (bytes > INT_MAX) return Status::invalid_argument("MPI backend: broadcast of more than INT_MAX bytes");
    return mpi_status(MPI_Bcast(buffer, static_cast<int>(bytes), MPI_BYTE, root, comm_), "MPI_Bcast");
  }

  Status alltoallv(const void* send, const std::vector<int64_t>& send_bytes, void* recv,
                   const std::vector<int64_t>& recv_bytes) override {
    std::vector<int> sdispls, rdispls;
    Result<std::vector<int>> scounts = to_int_counts(send_bytes, &sdispls);
    Result<std::vector<int>> rcounts = to_int_counts(recv_bytes, &rdispls);
    if (!scounts.is_ok()) return scounts.status();
    if (!rcounts.is_ok()) return rcounts.status();
    return mpi_status(MPI_Alltoallv(send, scounts->data(), sdispls.data(), MPI_BYTE, recv, rcounts->data(),
                                    rdispls.data(), MPI_BYTE, comm_), "MPI_Alltoallv");
  }

  Status reducescatter(const void* send, void* recv, const std::vector<int64_t>& recv_counts, DataType dtype,
                       ReduceOp op) override {
    Result<std::vector<int>> counts = to_int_counts(recv_counts, nullptr);
    if (!counts.is_ok()) return counts.status();
    return mpi_status(MPI_Reduce_scatter(send, recv, counts->data(), ctx_->datatype(dtype), ctx_->op(dtype, op), comm_),
                      "MPI_Reduce_scatter");
  }

  Status barrier() override { return mpi_status(MPI_Barrier(comm_), "MPI_Barrier"); }

 private:
  std::shared_ptr<MpiContext> ctx_;
  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace

Result<std::unique_ptr<Backend>> MpiBackendProvider::create_backend(const std::vector<int>& global_ranks, int set_id) {
  Result<MPI_Comm> comm = ctx_->create_subcomm(global_ranks, 2 * set_id + 1);
  if (!comm.is_ok()) return comm.status();
  return std::unique_ptr<Backend>(std::make_unique<MpiBackend>(ctx_, *comm));
}

}  // namespace korovod::mpi
