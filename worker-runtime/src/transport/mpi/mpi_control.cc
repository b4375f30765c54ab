#include <numeric>

#include "transport/mpi/mpi_providers.h"

namespace korovod::mpi {
namespace {

class MpiControl final : public ControlChannel {
 public:
  MpiControl(std::shared_ptr<MpiContext> ctx, MPI_Comm comm) : ctx_(std::move(ctx)), comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~MpiControl() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Status allreduce_bits(std::vector<uint64_t>& bits, BitwiseOp op) override {
    return mpi_status(MPI_Allreduce(MPI_IN_PLACE, bits.data(), static_cast<int>(bits.size()), MPI_UINT64_T,
                                    op == BitwiseOp::kAnd ? MPI_BAND : MPI_BOR, comm_),
                      "MPI_Allreduce(control bits)");
  }

  Result<std::vector<std::string>> gather_to_root(const std::string& mine) override {
    int len = static_cast<int>(mine.size());
    std::vector<int> lens(rank_ == 0 ? size_ : 0);
    KOROVOD_RETURN_IF_ERROR(mpi_status(MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, comm_), "MPI_Gather"));
    std::vector<int> displs(lens.size(), 0);
    if (!lens.empty()) std::exclusive_scan(lens.begin(), lens.end(), displs.begin(), 0);
    std::string all(rank_ == 0 ? static_cast<size_t>(displs.back() + lens.back()) : 0, '\0');
    KOROVOD_RETURN_IF_ERROR(mpi_status(MPI_Gatherv(mine.data(), len, MPI_BYTE, all.data(), lens.data(),
                                                   displs.data(), MPI_BYTE, 0, comm_), "MPI_Gatherv"));
    std::vector<std::string> out;
    for (size_t r = 0; r < lens.size(); ++r) out.push_back(all.substr(displs[r], lens[r]));
    return out;
  }

  Status broadcast_from_root(std::string& bytes) override {
    int len = static_cast<int>(bytes.size());
    KOROVOD_RETURN_IF_ERROR(mpi_status(MPI_Bcast(&len, 1, MPI_INT, 0, comm_), "MPI_Bcast(length)"));
    bytes.resize(len);
    return mpi_status(MPI_Bcast(bytes.data(), len, MPI_BYTE, 0, comm_), "MPI_Bcast(responses)");
  }

 private:
  std::shared_ptr<MpiContext> ctx_;  // keeps MPI alive while this communicator exists
  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace

Result<std::unique_ptr<ControlChannel>> MpiTransportProvider::create_control(const std::vector<int>& global_ranks,
                                                                             int set_id) {
  Result<MPI_Comm> comm = ctx_->create_subcomm(global_ranks, 2 * set_id);
  if (!comm.is_ok()) return comm.status();
  return std::unique_ptr<ControlChannel>(std::make_unique<MpiControl>(ctx_, *comm));
}

}  // namespace korovod::mpi
