#include <fmt/format.h>

#include <chrono>
#include <numeric>
#include <thread>

#include "transport/mpi/mpi_providers.h"

namespace korovod::mpi {
namespace {

constexpr int kProbeTag = 1;

class MpiControl final : public ControlChannel {
 public:
  MpiControl(std::shared_ptr<MpiContext> ctx, MPI_Comm comm, std::vector<int> global_ranks)
      : ctx_(std::move(ctx)), comm_(comm), global_ranks_(std::move(global_ranks)) {
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

  // MPI's collectives cannot be interrupted, so the watchdog asks the peers instead: one probe
  // to each, point to point on the control communicator (MPI keeps point-to-point messages apart
  // from its collectives, and this channel sends no others), from the watchdog's thread while the
  // background thread stays inside the stuck collective (needs MPI_THREAD_MULTIPLE), and theirs
  // listened for. A stuck rank's own watchdog sends its probes when it fires; a stopped or hung
  // rank sends none. Sends to it may never complete, and its receives never do: both are left
  // to MPI (cancelled and freed), as the runtime is failing for good.
  std::string silent_peers(double window_seconds) override {
    if (!ctx_->threads_multiple() || size_ < 2) return {};
    probe_in_.assign(static_cast<size_t>(size_), 0);
    std::vector<MPI_Request> recvs(static_cast<size_t>(size_), MPI_REQUEST_NULL);
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      MPI_Request send = MPI_REQUEST_NULL;
      MPI_Isend(&out_token_, 1, MPI_INT, r, kProbeTag, comm_, &send);
      MPI_Request_free(&send);  // a buffered probe; completion is MPI's business
      MPI_Irecv(&probe_in_[static_cast<size_t>(r)], 1, MPI_INT, r, kProbeTag, comm_, &recvs[static_cast<size_t>(r)]);
    }
    // Real time, like the TCP plane's window for notices: how long the others take to fire.
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(window_seconds);
    std::vector<bool> answered(static_cast<size_t>(size_), false);
    answered[static_cast<size_t>(rank_)] = true;
    for (;;) {
      bool all = true;
      for (int r = 0; r < size_; ++r) {
        if (answered[static_cast<size_t>(r)]) continue;
        int done = 0;
        MPI_Test(&recvs[static_cast<size_t>(r)], &done, MPI_STATUS_IGNORE);
        answered[static_cast<size_t>(r)] = done != 0;
        all = all && done != 0;
      }
      if (all || std::chrono::steady_clock::now() >= until) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::string silent;
    for (int r = 0; r < size_; ++r) {
      if (answered[static_cast<size_t>(r)]) continue;
      MPI_Cancel(&recvs[static_cast<size_t>(r)]);
      MPI_Request_free(&recvs[static_cast<size_t>(r)]);
      silent += fmt::format("{}{}", silent.empty() ? "" : ", ", ctx_->rank_name(global_ranks_[static_cast<size_t>(r)]));
    }
    if (silent.empty()) return {};
    return fmt::format("lost {} (it did not answer the stuck ranks' probes within {} s: alive but stopped, "
                       "stuck or cut off, or dead)",
                       silent, window_seconds);
  }

 private:
  std::shared_ptr<MpiContext> ctx_;  // keeps MPI alive while this communicator exists
  MPI_Comm comm_;
  std::vector<int> global_ranks_;   // by set rank
  int out_token_ = 1;               // what a probe carries (outlives the sends MPI may still hold)
  std::vector<int> probe_in_;       // the probes' receive buffers (outlive the freed receives)
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace

Result<std::unique_ptr<ControlChannel>> MpiTransportProvider::create_control(const std::vector<int>& global_ranks,
                                                                             int set_id) {
  Result<MPI_Comm> comm = ctx_->create_subcomm(global_ranks, 2 * set_id);
  if (!comm.is_ok()) return comm.status();
  return std::unique_ptr<ControlChannel>(std::make_unique<MpiControl>(ctx_, *comm, global_ranks));
}

}  // namespace korovod::mpi
